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
  target_compile_options(nk_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(nk_flags INTERFACE -fsanitize=address,undefined)
endif()
