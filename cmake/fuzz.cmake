# HETPS_FUZZ=ON: the compiler flags of a build of the fuzz targets (tests/fuzz) and of the
# libraries they read with, nothing else (the top-level CMakeLists.txt leaves out trainer/,
# benchmarks/ and the Catch2 tests, and LibTorch, which none of the code under fuzz links).
# Every file is compiled with libFuzzer's coverage and with AddressSanitizer and
# UndefinedBehaviorSanitizer, and any sanitizer finding aborts the run. Needs clang with its
# runtime libraries (Debian: clang, libclang-rt-14-dev); scripts/fuzz.sh configures it.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HETPS_FUZZ needs clang, whose libFuzzer it links; this is "
                      "${CMAKE_CXX_COMPILER_ID}: configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "(scripts/fuzz.sh does)")
endif()
# Line tables are all a sanitizer report needs, and cost less compile time than full -g.
add_compile_options(-gline-tables-only -fno-omit-frame-pointer
                    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
add_link_options(-fsanitize=address,undefined)
