# Debian's build flags (dpkg-buildflags), so the binary the package ships is hardened as
# Debian's own are: _FORTIFY_SOURCE=2, -fstack-protector-strong, -Werror=format-security,
# RELRO and BIND_NOW (hardening=+all; PIE is the compiler's default on Debian). Without it
# lintian reports hardening-no-fortify-functions and hardening-no-bindnow.
#
# Applied to optimised builds only: _FORTIFY_SOURCE needs -O (glibc warns otherwise, and
# -Werror makes that an error), and sanitizers bring their own checks. Off with
# -DRECLAIMD_DPKG_BUILDFLAGS=OFF; DEB_BUILD_MAINT_OPTIONS and DEB_*FLAGS_APPEND in the
# environment are honoured as dpkg-buildflags honours them.
find_program(DPKG_BUILDFLAGS dpkg-buildflags)
set(_dpkg_default OFF)
if(DPKG_BUILDFLAGS AND NOT RECLAIMD_SANITIZE AND NOT RECLAIMD_FUZZ AND NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
  set(_dpkg_default ON)
endif()
option(RECLAIMD_DPKG_BUILDFLAGS "Compile and link with dpkg-buildflags' hardening flags" ${_dpkg_default})

if(RECLAIMD_DPKG_BUILDFLAGS)
  if(NOT DPKG_BUILDFLAGS)
    message(FATAL_ERROR "RECLAIMD_DPKG_BUILDFLAGS=ON needs dpkg-buildflags (package dpkg-dev)")
  endif()
  if(DEFINED ENV{DEB_BUILD_MAINT_OPTIONS})
    set(_dpkg_options "$ENV{DEB_BUILD_MAINT_OPTIONS}")
  else()
    set(_dpkg_options "hardening=+all")
  endif()
  foreach(kind CPPFLAGS CXXFLAGS LDFLAGS)
    # Run from the source root: its -ffile-prefix-map maps that directory to ".".
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env "DEB_BUILD_MAINT_OPTIONS=${_dpkg_options}" ${DPKG_BUILDFLAGS} --get ${kind}
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
      OUTPUT_VARIABLE _flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    separate_arguments(_flags UNIX_COMMAND "${_flags}")
    if(kind STREQUAL "LDFLAGS")
      add_link_options(${_flags})
    else()
      # CMake reads neither CPPFLAGS nor these flags from anywhere else: one list for C++.
      add_compile_options(${_flags})
    endif()
    message(STATUS "dpkg-buildflags ${kind}: ${_flags}")
  endforeach()
endif()
