cmake_minimum_required(VERSION 3.20)
# Run on every build (cmake -P): refuses an #include that points up the layer order
#   util <- text, report;  util <- runtime <- {core (the models), audit (the engine)};
#   {core, audit} <- formats <- train <- {nli, bench};  cli on top
#   and python (the package's extension, src/python/csrc) on top of audit and report; nothing includes it
# audit/ is the engine, formats/ the model readers: the engine never includes a reader, and a
# reader includes of the engine only its target interface (engine_interface below).
# Each layer is its own static library linked only along these arrows, so a call upward also
# fails to link; this check says which line broke the order before anything compiles.
# Usage: cmake -DSRC_DIR=<src> -P check_layers.cmake
set(allowed_util   util)
set(allowed_text   util text)
set(allowed_report util report)
set(allowed_runtime util runtime)
set(allowed_core    util runtime core)
set(allowed_audit   util runtime audit)
set(allowed_formats util runtime core audit formats)
set(allowed_train   util text runtime core audit formats train)
set(allowed_bench   util text runtime core audit formats train bench)
set(allowed_nli     util text runtime core audit formats train nli)
set(allowed_cli     util text report runtime core audit formats train bench nli cli)
set(allowed_python  util report runtime audit python)
set(layers util text report runtime core audit formats train bench nli cli python)
# What a reader may include of the engine: the target it implements and the helpers a target
# uses (its signature, dtype twins, the structural redraw, the train-mode proof, refusals). The
# probes, the checks and the driver stay the engine's own.
set(engine_interface
  audit/audit_cost.h audit/audit_refusal.h audit/audit_target.h audit/dtype_twins.h
  audit/model_file_target.h audit/model_signature.h audit/train_mode_proof.h audit/unit_probe.h
  audit/zero_redraw.h)
set(dir_python python/csrc)

set(violations "")
foreach(layer IN LISTS layers)
  set(dir ${layer})
  if(DEFINED dir_${layer})
    set(dir ${dir_${layer}})
  endif()
  file(GLOB_RECURSE files "${SRC_DIR}/${dir}/*.h" "${SRC_DIR}/${dir}/*.cpp")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/.*" "\\1" target "${line}")
      if(NOT target IN_LIST layers)
        continue()
      endif()
      if(NOT target IN_LIST allowed_${layer})
        file(RELATIVE_PATH rel "${SRC_DIR}/.." "${f}")
        string(APPEND violations "  ${rel}: ${line} (${layer} may include only: ${allowed_${layer}})\n")
      elseif(layer STREQUAL "formats" AND target STREQUAL "audit")
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
        if(NOT header IN_LIST engine_interface)
          file(RELATIVE_PATH rel "${SRC_DIR}/.." "${f}")
          string(APPEND violations "  ${rel}: ${line} (a reader includes of the engine only its target interface: ${engine_interface})\n")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering: includes against the layer order\n${violations}")
endif()
