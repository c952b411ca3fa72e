# Third-party dependencies, all from Debian packages (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc)
# Debian's SystemC is built as C++17; without this a C++20 build fails to link on
# sc_api_version_2_3_4_cxx202002L (shared/DESIGN.md section 7).
add_library(tpusim_systemc INTERFACE)
target_link_libraries(tpusim_systemc INTERFACE PkgConfig::SYSTEMC)
target_compile_definitions(tpusim_systemc INTERFACE SC_CPLUSPLUS=201703L)

find_package(nlohmann_json 3.10 REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(GTest REQUIRED)
if(TPUSIM_BENCH)
  find_package(benchmark REQUIRED)
endif()

# tpusim_layer(NAME DIR DEPS...): a static library from every .cc in DIR (recursively),
# except fuzz targets (*_fuzz.cc).
function(tpusim_layer name)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_fuzz\\.cc$")
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${L_DEPS})
  else()  # a layer with headers only so far
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${L_DEPS})
  endif()
endfunction()

# tpusim_tests(DEPS...): one gtest binary per test folder, named after the folder
# (test/compiler/values -> compiler_values_tests), from every *_test.cc in it; its name is
# returned in TPUSIM_TEST_TARGET. ctest still runs each test in its own process (SystemC
# elaborates once per process). One binary per folder, not per file: each link of the
# static libraries took 7 s under ASan, 111 of them a third of CI's build time.
include(GoogleTest)
function(tpusim_tests)
  cmake_parse_arguments(T "" "" "DEPS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/test ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE "/" "_" name "${rel}_tests")
  add_executable(${name} ${tests})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                       PROPERTIES ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1"
                       DISCOVERY_TIMEOUT 60)
  set(TPUSIM_TEST_TARGET ${name} PARENT_SCOPE)
endfunction()
