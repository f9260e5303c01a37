// Nothing to compile: the header declares libFuzzer's driver, which -sanitize=fuzzer links in.
#include "CFuzzDriver.h"
