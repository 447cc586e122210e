# SPDX-License-Identifier: Apache-2.0
# The data-parallel example, its loss-curve test and the scaling benchmark
# (issue 17), built only with the MPI component (target clmad_mpi). They live
# in examples/mpi/ and bench/mpi/, out of the examples/*.c and bench/*.c
# globs, which build without MPI. Included at the end of the top-level
# CMakeLists.txt, after the component and the tests are defined.
if(TARGET clmad_mpi)
  add_executable(example_hmlstm_mpi ${PROJECT_SOURCE_DIR}/examples/mpi/hmlstm_mpi.c)
  target_link_libraries(example_hmlstm_mpi PRIVATE clmad_mpi m)
  target_compile_options(example_hmlstm_mpi PRIVATE ${CLMAD_WARNINGS})

  add_executable(bench_mpi ${PROJECT_SOURCE_DIR}/bench/mpi/bench_mpi.c)
  target_link_libraries(bench_mpi PRIVATE clmad_mpi m)
  target_include_directories(bench_mpi PRIVATE ${PROJECT_SOURCE_DIR}/bench ${PROJECT_SOURCE_DIR}/examples/mpi)
  target_compile_options(bench_mpi PRIVATE ${CLMAD_WARNINGS})

  # 2 ranks against one process on the same global batch (the script says
  # what it checks and why the tolerance). Not in the checking builds
  # (sanitizers, valgrind, Oclgrind), as tests/mpi.
  if(CLMAD_BUILD_TESTS AND NOT CLMAD_SANITIZE AND NOT CLMAD_TEST_LAUNCHER)
    # Open MPI starts at most one process per core without --oversubscribe.
    execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE clmad_mpiexec_version
                    ERROR_VARIABLE clmad_mpiexec_version RESULT_VARIABLE clmad_ignored)
    set(clmad_example_mpiexec_flags ${MPIEXEC_PREFLAGS})
    if(clmad_mpiexec_version MATCHES "Open MPI|OpenRTE")
      list(APPEND clmad_example_mpiexec_flags --oversubscribe)
    endif()
    add_test(NAME mpi_hmlstm_loss_curve
             COMMAND ${PROJECT_SOURCE_DIR}/examples/mpi/loss_curve_test.sh $<TARGET_FILE:example_hmlstm_mpi>
                     ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${clmad_example_mpiexec_flags})
    clmad_test_properties(mpi_hmlstm_loss_curve 600)
    # Open MPI refuses to start as root without these.
    set_property(TEST mpi_hmlstm_loss_curve APPEND PROPERTY ENVIRONMENT
                 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
    set_property(TEST mpi_hmlstm_loss_curve APPEND PROPERTY LABELS mpi)
  endif()
endif()
