#ifndef USM_CZLIB_SHIM_H
#define USM_CZLIB_SHIM_H
#include <zlib.h>

/* inflateInit2 is a macro; give Swift a function for raw DEFLATE (windowBits -15). */
static inline int usm_inflate_init_raw(z_stream *strm) {
    return inflateInit2(strm, -15);
}
#endif
