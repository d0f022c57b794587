# Every third-party dependency comes from a Debian 12 package; a missing one
# stops configure with the name of the package to install.
function(nk_require found package what)
  if(NOT ${found})
    message(FATAL_ERROR "neurkit needs ${what}: install the Debian package '${package}' "
                        "(apt-get install ${package}, or: make -f Makefile.dist deps)")
  endif()
endfunction()

find_package(HDF5 COMPONENTS C HL QUIET)
nk_require(HDF5_FOUND libhdf5-dev "HDF5 (C and high-level libraries)")

find_package(Eigen3 3.3 NO_MODULE QUIET)
nk_require(Eigen3_FOUND libeigen3-dev "Eigen 3")

find_package(spdlog QUIET)
nk_require(spdlog_FOUND libspdlog-dev "spdlog")

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp)
  if(CLI11_INCLUDE_DIR)
    set(CLI11_FOUND TRUE)
    add_library(CLI11::CLI11 INTERFACE IMPORTED)
    target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
  endif()
endif()
nk_require(CLI11_FOUND libcli11-dev "CLI11")

# Boost.Math (header-only): the Beta, binomial and normal distributions of proxy-certify.
find_path(BOOST_MATH_INCLUDE_DIR boost/math/distributions/beta.hpp)
nk_require(BOOST_MATH_INCLUDE_DIR libboost-dev "Boost.Math (headers)")

find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h)
if(NK_BUILD_TESTS)
  nk_require(DOCTEST_INCLUDE_DIR doctest-dev "doctest")
endif()

find_path(FFTW3_INCLUDE_DIR fftw3.h)
find_library(FFTW3_LIB fftw3)
find_library(FFTW3F_LIB fftw3f)
if(FFTW3_INCLUDE_DIR AND FFTW3_LIB AND FFTW3F_LIB)
  set(FFTW3_FOUND TRUE)
endif()
nk_require(FFTW3_FOUND libfftw3-dev "FFTW 3 (double and single precision)")

find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb)
find_library(STB_LIB stb)
if(STB_INCLUDE_DIR AND STB_LIB)
  set(STB_FOUND TRUE)
endif()
nk_require(STB_FOUND libstb-dev "stb (stb_image, stb_image_write, stb_image_resize)")

# LAPACK's cosine-sine decomposition (zuncsd) for tnqe-encode's Shannon decomposition.
find_package(LAPACK QUIET)
nk_require(LAPACK_FOUND liblapack-dev "LAPACK")

find_package(ZLIB QUIET)
nk_require(ZLIB_FOUND zlib1g-dev "zlib")

# JSON of Hugging Face model folders (config.json, safetensors headers) for nk-lm import/export.
find_package(nlohmann_json 3 QUIET)
nk_require(nlohmann_json_FOUND nlohmann-json3-dev "nlohmann/json")

find_package(OpenMP QUIET)
nk_require(OpenMP_CXX_FOUND "libgomp1 (part of g++)" "OpenMP")

find_package(Threads REQUIRED)

# CUDA: AUTO builds the module when nvcc is found, also under /usr/local/cuda/bin
# which is not always on PATH.
set(NK_CUDA_ENABLED OFF)
if(NOT NK_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(NK_NVCC nvcc HINTS /usr/local/cuda/bin /usr/local/cuda/bin /opt/cuda/bin)
    if(NK_NVCC)
      set(CMAKE_CUDA_COMPILER ${NK_NVCC})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Ampere and Hopper (H100/H200) machine code, plus PTX for newer GPUs.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(NK_CUDA_ENABLED ON)
  elseif(NK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NK_CUDA=ON but no CUDA toolkit (nvcc, cuBLAS, cuFFT) was found; "
                        "install it or configure with -DNK_CUDA=OFF")
  else()
    message(STATUS "CUDA toolkit not found: building the CPU path only")
  endif()
endif()
