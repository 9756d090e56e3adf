#pragma once
// Include after any torch header: glog (pulled in by libtorch 1.13) defines CHECK macros that clash
// with doctest's.
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>
