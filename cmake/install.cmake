# What `cmake --install` and `cpack -G DEB` put on a system besides the
# binary: the man page taskq(1), generated at build time by help2man from
# the built binary's help texts (cmake/taskq-man), and the bash, zsh and
# fish completions in the folders each shell searches. Included from the
# top-level CMakeLists.txt after the taskq target.

# The man page: target `man`, part of `all` when help2man is installed.
find_program(TASKQ_HELP2MAN help2man)
if(TASKQ_HELP2MAN)
  set(TASKQ_MAN ${CMAKE_CURRENT_BINARY_DIR}/taskq.1)
  add_custom_command(
    OUTPUT ${TASKQ_MAN}
    COMMAND ${CMAKE_COMMAND} -E env HELP2MAN=${TASKQ_HELP2MAN}
      bash ${CMAKE_CURRENT_SOURCE_DIR}/cmake/taskq-man $<TARGET_FILE:taskq>
      ${CMAKE_CURRENT_SOURCE_DIR}/README.md ${TASKQ_MAN}
    DEPENDS taskq ${CMAKE_CURRENT_SOURCE_DIR}/cmake/taskq-man
      ${CMAKE_CURRENT_SOURCE_DIR}/README.md
    COMMENT "Generating the man page taskq.1 (help2man)")
  add_custom_target(man ALL DEPENDS ${TASKQ_MAN})
  install(FILES ${TASKQ_MAN} DESTINATION share/man/man1)
else()
  message(STATUS "help2man not found: no man page (apt-get install help2man)")
endif()

# Completions. bash-completion and fish search share/ under every prefix
# in XDG_DATA_DIRS (/usr/local/share and /usr/share by default). Debian's
# zsh searches share/zsh/vendor-completions under /usr only, and
# share/zsh/site-functions under /usr/local, so the folder is chosen when
# installing, from the prefix installed to.
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/completions/taskq.bash
  DESTINATION share/bash-completion/completions RENAME taskq)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/completions/taskq.fish
  DESTINATION share/fish/vendor_completions.d)
install(CODE "
  if(CMAKE_INSTALL_PREFIX MATCHES \"(^|/)usr/*$\")
    set(taskq_zsh_dir share/zsh/vendor-completions)
  else()
    set(taskq_zsh_dir share/zsh/site-functions)
  endif()
  file(INSTALL \"${CMAKE_CURRENT_SOURCE_DIR}/completions/_taskq\"
    DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${taskq_zsh_dir}\")
")

# The Debian package: cd build && cpack -G DEB.
set(CPACK_PACKAGE_NAME taskq)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "task queue in one command, on SQLite or PostgreSQL")
set(CPACK_PACKAGE_DESCRIPTION
  "taskq keeps tasks, their states, their error history and their leases in
one transactional database (a SQLite file, or PostgreSQL when several
machines share a queue): shell scripts enqueue work, cron-driven workers
lease and finish it, and operators pause, resume, sleep and kill tasks by
hand. There is no daemon: every invocation opens the database, does its
work in one transaction, and exits.")
set(CPACK_PACKAGE_CONTACT "taskq maintainers <taskq@example.org>"
  CACHE STRING "The Debian package's Maintainer field")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # taskq_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_STRIP_FILES ON) # the binary without its symbol table
# dpkg-shlibdeps reads the libraries the binary links (libc6, and
# libsqlite3-0 unless SQLite is linked in) from the binary itself. libpq is
# loaded with dlopen when a postgresql:// database is first used, so it is
# only recommended.
find_program(TASKQ_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TASKQ_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  # Without it: the same list by hand. Packed relocations (DT_RELR) need
  # glibc 2.36; SQLite and ncurses may be linked in (CMakeLists.txt).
  if(TASKQ_HAVE_RELR)
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36)")
  else()
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6")
  endif()
  if(NOT TASKQ_SQLITE_LINKED_IN)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libsqlite3-0")
  endif()
  if(NOT (TASKQ_NCURSESW_A AND TASKQ_TINFO_A))
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libncursesw6, libtinfo6")
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpq5")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
# Debian policy: man pages gzipped (cmake/deb-gzip-man.cmake runs on the
# staged files before they are packed).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/deb-gzip-man.cmake)
include(CPack)
