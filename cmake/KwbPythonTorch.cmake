# The embedded CPython of kwb-worker (KernelBench's answer format, docs/candidate-format.md): a
# Python whose `torch` is the very libtorch the worker links (Debian: python3-torch beside
# libtorch-dev; the GPU machine: the pip package whose cmake_prefix_path found Torch), so tensors
# pass between the two sides without copies and one caching allocator serves both.
#
# KWB_WORKER_PYTHON: AUTO (on when such a Python is found), ON (an error when not), OFF.
# Sets KWB_PYTHON_FOUND, KWB_PYTHON_EXECUTABLE and the imported target Python3::Python.
set(KWB_WORKER_PYTHON AUTO CACHE STRING "Embed CPython in kwb-worker for KernelBench-format answers: AUTO, ON or OFF")
set_property(CACHE KWB_WORKER_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(KWB_PYTHON_FOUND OFF)
set(KWB_PYTHON_WHY "")

if(NOT KWB_WORKER_PYTHON STREQUAL "OFF")
  get_filename_component(_kwb_libtorch "${TORCH_LIBRARY}" REALPATH)
  # Candidates in order: the one named, every python3 on PATH (pyenv shims and venvs come first
  # there and often have no torch), then the system's.
  set(_kwb_candidates "")
  if(Python3_EXECUTABLE)
    list(APPEND _kwb_candidates "${Python3_EXECUTABLE}")
  endif()
  string(REPLACE ":" ";" _kwb_path "$ENV{PATH}")
  foreach(_dir IN LISTS _kwb_path)
    if(EXISTS "${_dir}/python3")
      list(APPEND _kwb_candidates "${_dir}/python3")
    endif()
  endforeach()
  list(APPEND _kwb_candidates /usr/bin/python3)
  list(REMOVE_DUPLICATES _kwb_candidates)
  set(_kwb_probe "import os, torch; print(os.path.realpath(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch.so')))")
  foreach(_py IN LISTS _kwb_candidates)
    execute_process(COMMAND "${_py}" -c "${_kwb_probe}" OUTPUT_VARIABLE _kwb_lib ERROR_QUIET
                    RESULT_VARIABLE _kwb_rc OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
    if(_kwb_rc EQUAL 0 AND _kwb_lib STREQUAL _kwb_libtorch)
      set(KWB_PYTHON_EXECUTABLE "${_py}")
      break()
    elseif(_kwb_rc EQUAL 0)
      string(APPEND KWB_PYTHON_WHY " ${_py}: its torch is ${_kwb_lib}, not ${_kwb_libtorch};")
    else()
      string(APPEND KWB_PYTHON_WHY " ${_py}: no importable torch;")
    endif()
  endforeach()
  if(KWB_PYTHON_EXECUTABLE)
    # That interpreter's own headers and library (not whatever FindPython3 meets first).
    set(Python3_EXECUTABLE "${KWB_PYTHON_EXECUTABLE}")
    find_package(Python3 COMPONENTS Interpreter Development.Embed)
    if(Python3_Development.Embed_FOUND)
      set(KWB_PYTHON_FOUND ON)
    else()
      set(KWB_PYTHON_WHY "${KWB_PYTHON_EXECUTABLE} has torch but no Python development files (python3-dev)")
    endif()
  elseif(KWB_PYTHON_WHY STREQUAL "")
    set(KWB_PYTHON_WHY "no python3 found")
  endif()
  if(NOT KWB_PYTHON_FOUND AND KWB_WORKER_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "KWB_WORKER_PYTHON=ON but no Python with this libtorch's torch:${KWB_PYTHON_WHY}")
  endif()
endif()

if(KWB_PYTHON_FOUND)
  message(STATUS "kwb-worker embeds Python ${Python3_VERSION} (${KWB_PYTHON_EXECUTABLE}): KernelBench-format answers are evaluated")
else()
  message(STATUS "kwb-worker without Python: KernelBench-format answers are refused (format_error).${KWB_PYTHON_WHY}")
endif()
