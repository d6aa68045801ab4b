# Link with LLVM's lld where the compiler takes it (scripts/setup.sh installs it). The trees link
# some sixty programs and libraries, each with its debug information: GNU ld spent most of a warm
# build's CPU on that. Set FERRY_LLD=OFF to link with the compiler's default linker.
option(FERRY_LLD "Link with lld when the compiler can" ON)
if(FERRY_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld FERRY_HAVE_LLD)
  if(FERRY_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
