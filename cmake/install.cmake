# What `cmake --install` and `cpack -G DEB` put on a system besides the
# binary: the man pages taskq(1) and taskq-concepts(7), written in POD
# (doc/man/*.pod) and rendered at build time by pod2man, and the bash, zsh
# and fish completions in the folders each shell searches. Included from
# the top-level CMakeLists.txt after the taskq target.

# The man pages: target `man`, part of `all` when pod2man is installed
# (Debian's perl package has it). pod2man rather than pandoc, asciidoctor
# or ronn: perl is on every machine that builds or tests taskq already, so
# CI installs nothing for it.
find_program(TASKQ_POD2MAN pod2man)
if(TASKQ_POD2MAN)
  set(TASKQ_MANS)
  foreach(page taskq.1 taskq-concepts.7)
    string(REGEX MATCH "[0-9]$" section ${page})
    string(REGEX REPLACE "\\.[0-9]$" "" name ${page})
    string(TOUPPER ${name} title)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${page})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${TASKQ_POD2MAN} --utf8 --section=${section} --name=${title}
        "--center=taskq manual" --release=taskq
        "--date=version ${PROJECT_VERSION}" --errors=die
        ${CMAKE_CURRENT_SOURCE_DIR}/doc/man/${page}.pod ${out}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/doc/man/${page}.pod
      COMMENT "Rendering the man page ${page} (pod2man)")
    list(APPEND TASKQ_MANS ${out})
    install(FILES ${out} DESTINATION share/man/man${section})
  endforeach()
  add_custom_target(man ALL DEPENDS ${TASKQ_MANS})
else()
  message(STATUS "pod2man not found: no man pages (apt-get install perl)")
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
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpq5, libmicrohttpd12") # loaded on use: PostgreSQL, serve
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
# Debian policy: man pages gzipped (cmake/deb-gzip-man.cmake runs on the
# staged files before they are packed).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/deb-gzip-man.cmake)
include(CPack)
