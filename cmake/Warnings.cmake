# Compile flags shared by every neurkit target.
add_library(nk_flags INTERFACE)
target_compile_options(nk_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>)
if(NK_WERROR)
  target_compile_options(nk_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(NK_NATIVE)
  target_compile_options(nk_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
if(NK_SANITIZE)
  # -O1 after the build type's flags: the checks stay, the tests run at a few
  # times Release speed instead of the tenfold of -O0; -g1 keeps file:line in
  # the reports at a fraction of full debug info's compile and link time (CI
  # time, issue #24).
  target_compile_options(nk_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(nk_flags INTERFACE -fsanitize=address,undefined)
endif()
