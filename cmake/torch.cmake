# Finds LibTorch from one of two providers, chosen with HETPS_TORCH and remembered in the cache:
#   system  Debian's libtorch-dev (1.13, CPU only, C++17), found in the default prefixes;
#   pip     the LibTorch inside PyPI's `torch` package (2.x: CUDA on Linux x86_64, MPS on macOS),
#           in the environment of HETPS_TORCH_PYTHON (default: the repository's .venv, which
#           `scripts/install-deps.sh --torch pip` creates).
# Defines TORCH_LIBRARIES, TORCH_CXX_FLAGS (find_package(Torch)), HETPS_TORCH_VERSION and
# HETPS_TORCH_LIBRARY_DIR, and fails when the libraries found are not the provider's.
set(HETPS_TORCH "system" CACHE STRING "LibTorch provider: system (Debian's libtorch-dev) or pip (PyPI's torch)")
set_property(CACHE HETPS_TORCH PROPERTY STRINGS system pip)
if(NOT HETPS_TORCH MATCHES "^(system|pip)$")
  message(FATAL_ERROR "HETPS_TORCH is '${HETPS_TORCH}'; expected system or pip")
endif()

if(HETPS_TORCH STREQUAL "pip")
  set(HETPS_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
      "Python whose environment holds PyPI's torch (HETPS_TORCH=pip)")
  execute_process(
    COMMAND "${HETPS_TORCH_PYTHON}" -c "import os, torch; print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE torch_package_dir ERROR_VARIABLE torch_error RESULT_VARIABLE torch_result
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT torch_result EQUAL 0)
    message(FATAL_ERROR "HETPS_TORCH=pip: '${HETPS_TORCH_PYTHON}' cannot import torch "
                        "(run scripts/install-deps.sh --torch pip):\n${torch_error}")
  endif()
  # The package directory, not torch.utils.cmake_prefix_path: with the latter, TorchConfig.cmake
  # searches the system prefixes first and takes Debian's libtorch where it is installed.
  list(PREPEND CMAKE_PREFIX_PATH "${torch_package_dir}")
  set(Torch_DIR "${torch_package_dir}/share/cmake/Torch" CACHE PATH "TorchConfig.cmake's directory" FORCE)
  set(HETPS_TORCH_LIBRARY_DIR "${torch_package_dir}/lib")
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    # The CUDA build's libtorch_cuda needs NCCL, cuDNN & co from the nvidia-* wheels beside torch.
    # Torch's CMake adds the CUDA toolkit's lib directory as an rpath, whose older NCCL would then
    # satisfy the link-time search of libtorch_cuda's dependencies; -rpath-link puts the wheels'
    # first. At run time the wheels' own RPATH finds them.
    get_filename_component(site_packages "${torch_package_dir}" DIRECTORY)
    file(GLOB nvidia_lib_dirs LIST_DIRECTORIES true "${site_packages}/nvidia/*/lib")
    foreach(dir IN LISTS nvidia_lib_dirs)
      if(IS_DIRECTORY "${dir}")
        add_link_options("LINKER:-rpath-link,${dir}")
      endif()
    endforeach()
    # find_package(Torch) of the CUDA build enables CUDA and needs nvcc, though no GPU.
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
else()
  set(HETPS_TORCH_LIBRARY_DIR "")
endif()

find_package(Torch REQUIRED)

# TorchConfig.cmake prints "Found Torch" whichever libtorch it linked: check it is the provider's.
get_filename_component(torch_library_dir "${TORCH_LIBRARY}" DIRECTORY)
if(HETPS_TORCH STREQUAL "pip")
  get_filename_component(torch_library_dir "${torch_library_dir}" REALPATH)
  get_filename_component(expected_dir "${HETPS_TORCH_LIBRARY_DIR}" REALPATH)
  if(NOT torch_library_dir STREQUAL expected_dir)
    message(FATAL_ERROR "HETPS_TORCH=pip found ${TORCH_LIBRARY}, not the libtorch in ${expected_dir}")
  endif()
endif()
set(HETPS_TORCH_LIBRARY_DIR "${torch_library_dir}")
set(HETPS_TORCH_VERSION "${Torch_VERSION}")
message(STATUS "LibTorch ${Torch_VERSION} (${HETPS_TORCH}) in ${torch_library_dir}")
