// dtl: stands in for Gloo's gloo/common/error.h, which c10d's ProcessGroupGloo.hpp includes and
// which declares nothing that header uses (see ../../README.md).
#pragma once
