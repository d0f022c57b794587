# nk_tool(NAME [LINKS target...]) - a paper tool in one line of tools/NAME/CMakeLists.txt:
#   NAME_lib   every tools/NAME/*.cpp but main.cpp, a static library that the tests link;
#              its headers are included as "NAME/header.hpp"
#   NAME       the executable, from tools/NAME/main.cpp, installed
#   unit.NAME  tests/unit/NAME.cpp (doctest suite "NAME"), when it exists
#   cli.NAME*  tests/cli/NAME.sh and tests/cli/NAME.*.sh, when they exist
# LINKS adds shared libraries beyond nk::core (nk::kernels, nk::nn, nk::lm).
function(nk_tool name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LINKS")
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/main\\.cpp$")
  add_library(${name}_lib STATIC ${sources})
  target_include_directories(${name}_lib PUBLIC ${PROJECT_SOURCE_DIR}/tools)
  target_link_libraries(${name}_lib PUBLIC nk::core ${arg_LINKS} PRIVATE nk_flags)
  add_executable(${name} main.cpp)
  target_link_libraries(${name} PRIVATE ${name}_lib nk_flags)
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set_property(GLOBAL APPEND PROPERTY NK_TOOLS ${name})
endfunction()
