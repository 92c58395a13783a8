# CPACK_PRE_BUILD_SCRIPTS: gzips the staged man pages (Debian policy 12.1)
# before CPack packs them.
file(GLOB_RECURSE pages
  "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/*.[1-9]")
foreach(page IN LISTS pages)
  execute_process(COMMAND gzip -9n -f "${page}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()
