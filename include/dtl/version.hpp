// dtl — version.
#ifndef DTL_VERSION_HPP
#define DTL_VERSION_HPP

#define DTL_VERSION_MAJOR 0
#define DTL_VERSION_MINOR 1
#define DTL_VERSION_PATCH 0
#define DTL_VERSION_STRING "0.1.0"

#endif  // DTL_VERSION_HPP
