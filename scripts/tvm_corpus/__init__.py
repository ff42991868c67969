"""Library behind ``scripts/gen_tvm_models.py``: builds DNN models with TVM Relax,
lowers them with TVM's default CUDA pipeline and dlight default GPU schedules,
extracts the kernels and the launch sequence the TVM runtime would issue, and
emits one self-contained CUDA program per model.

Modules:
  fill       deterministic input/weight values and the output checksum (NumPy side)
  nputil     NumPy operators of the references
  program    host arrays, phases (Relax functions, host loops) and bindings
  lower      Relax module -> one KernelPlan per function (CUDA source, memory
             plan, launch sequence)
  emit       KernelPlans -> .cu text
  replay     re-run a launch plan on the CPU with TVM to check the extraction
  models/    the model definitions and their NumPy references

Everything that imports TVM is imported lazily, so ``fill`` and the reference
code run with NumPy alone.
"""
