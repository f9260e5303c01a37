#ifndef USM_CZSTD_SHIM_H
#define USM_CZSTD_SHIM_H
#include <zstd.h>
#endif
