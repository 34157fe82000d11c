// expect-first: dtl: compile with -DUSE_DISTRIBUTED -DUSE_C10D_GLOO
// A header-only build by a plain g++ line that lacks LibTorch's distributed defines: the first
// error names them and what adds them, not "c10d::ProcessGroupGloo has not been declared".
#undef USE_DISTRIBUTED
#undef USE_C10D_GLOO
#include <dtl/context.hpp>

int main() {}
