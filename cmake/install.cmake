# The installed package (docs/architecture.md, "Installed layout"):
#   bin/pktpath                                 the CLI
#   lib/libpktpath_bpf.so.MAJOR[.MINOR.0], .a   the classic BPF C API (include/pktpath/bpf.h)
#   lib/libpktpath.a                            bpf, net and tools layers (C++; pktpath_lib)
#   include/pktpath/bpf.h                       the C API
#   include/pktpath/{base,bpf,core,...}/*.h     the C++ headers ("core/netdevice.h" style)
#   lib/cmake/pktpath/                          pktpathConfig.cmake: pktpath::bpf,
#                                               pktpath::bpf_static, pktpath::pktpath
#   lib/pkgconfig/pktpath.pc                    the C API library
#   share/man/man1/pktpath.1
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The C API's version is the header's; the shared library's SONAME follows its major.
file(STRINGS ${CMAKE_SOURCE_DIR}/include/pktpath/bpf.h bpf_version_lines
     REGEX "^#define PKTPATH_BPF_VERSION_(MAJOR|MINOR) [0-9]+$")
foreach(line ${bpf_version_lines})
  string(REGEX MATCH "(MAJOR|MINOR) ([0-9]+)" _ "${line}")
  set(PKTPATH_BPF_VERSION_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
if(NOT DEFINED PKTPATH_BPF_VERSION_MAJOR OR NOT DEFINED PKTPATH_BPF_VERSION_MINOR)
  message(FATAL_ERROR "include/pktpath/bpf.h: no PKTPATH_BPF_VERSION_MAJOR/MINOR")
endif()

# libpktpath_bpf: the bpf layer's objects (PIC, hidden visibility), shared and static.
# The version script keeps the dynamic symbol table to the C API whatever template
# instantiations the C++ code makes.
set(bpf_map ${CMAKE_SOURCE_DIR}/src/bpf/c_api.map)
add_library(pktpath_bpf_shared SHARED $<TARGET_OBJECTS:pktpath_bpf>)
add_library(pktpath_bpf_static STATIC $<TARGET_OBJECTS:pktpath_bpf>)
foreach(t pktpath_bpf_shared pktpath_bpf_static)
  target_link_libraries(${t} PRIVATE PkgConfig::PCAP fmt::fmt)
  target_include_directories(${t} INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${t} PROPERTIES OUTPUT_NAME pktpath_bpf LINKER_LANGUAGE CXX)
endforeach()
set_target_properties(pktpath_bpf_shared PROPERTIES
  VERSION ${PKTPATH_BPF_VERSION_MAJOR}.${PKTPATH_BPF_VERSION_MINOR}.0
  SOVERSION ${PKTPATH_BPF_VERSION_MAJOR} EXPORT_NAME bpf LINK_DEPENDS ${bpf_map})
set_target_properties(pktpath_bpf_static PROPERTIES EXPORT_NAME bpf_static)
# The archive's objects are C++: a C program (project(app C)) links with the C driver,
# which adds neither the C++ runtime nor libm, so they are part of its link interface.
target_link_libraries(pktpath_bpf_static INTERFACE stdc++ m)
target_link_options(pktpath_bpf_shared PRIVATE -Wl,--version-script=${bpf_map})
if(NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")  # sanitizer runtimes resolve at program load
  target_link_options(pktpath_bpf_shared PRIVATE -Wl,--no-undefined)
endif()

# pktpath::pktpath: the C++ library, pktpath_lib's archive linked whole (its kinds and
# settings register themselves from static objects).
set_target_properties(pktpath_lib PROPERTIES OUTPUT_NAME pktpath EXPORT_NAME pktpath_archive)
target_include_directories(pktpath_lib INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/pktpath>)
add_library(pktpath_whole INTERFACE)
# (export does not rename targets inside $<LINK_LIBRARY>: the installed name is spelled out)
target_link_libraries(pktpath_whole INTERFACE
  "$<BUILD_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,pktpath_lib>>"
  "$<INSTALL_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,pktpath::pktpath_archive>>")
set_target_properties(pktpath_whole PROPERTIES EXPORT_NAME pktpath)

install(TARGETS pktpath RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS pktpath_bpf_shared pktpath_bpf_static pktpath_lib pktpath_whole EXPORT pktpathTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/pktpath/bpf.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pktpath)
foreach(dir base bpf core sched netfilter drivers tools)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pktpath
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/docs/pktpath.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/pktpath)
install(EXPORT pktpathTargets NAMESPACE pktpath:: DESTINATION ${cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/pktpathConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/pktpathConfig.cmake INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pktpathConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/pktpathConfig.cmake ${CMAKE_BINARY_DIR}/pktpathConfigVersion.cmake
        DESTINATION ${cmake_dir})

# pkg-config: prefix relative to the .pc file, so the package works under any --prefix.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH PKTPATH_PC_TO_PREFIX /prefix/${pc_dir} /prefix)
string(REGEX REPLACE "/$" "" PKTPATH_PC_TO_PREFIX "${PKTPATH_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/pktpath.pc.in ${CMAKE_BINARY_DIR}/pktpath.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/pktpath.pc DESTINATION ${pc_dir})
