// doctest's main, in its own translation unit (no torch, no unity merge).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
