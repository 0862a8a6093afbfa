# CPack pre-build script: strips the staged ELF executables as dh_strip does (the symbols, and
# the .comment and .note sections lintian reports as binary-has-unneeded-section).
file(GLOB_RECURSE _staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_DIRECTORY}/*/sbin/*")
if(NOT _staged)
  message(FATAL_ERROR "StripForDebian: no sbin/ executable under ${CPACK_TEMPORARY_DIRECTORY}")
endif()
foreach(file IN LISTS _staged)
  execute_process(COMMAND ${CPACK_RECLAIMD_STRIP} --remove-section=.comment --remove-section=.note ${file}
    COMMAND_ERROR_IS_FATAL ANY)
endforeach()
