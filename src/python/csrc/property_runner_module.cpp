// grassaudit._property_runner: the property search's RapidCheck runner (audit/property_runner.h)
// as a module of its own, handed to the engine as the PyCapsule "search". It is linked with
// RapidCheck and a private libstdc++ and exports nothing but PyInit: Debian's librapidcheck.a is
// compiled for executables, and its references to libstdc++'s vtables, VTTs and std::cerr only
// resolve inside the object that links libstdc++ itself. Only C types cross the capsule, so the
// two libstdc++ copies never share an object.
#include <Python.h>

#include "audit/property_runner.h"

namespace {

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "grassaudit._property_runner",
                          "The property search's RapidCheck runner, for grassaudit._engine.", -1, nullptr,
                          nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__property_runner() {
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  PyObject* cap = PyCapsule_New(reinterpret_cast<void*>(&grassaudit_property_search),
                                "grassaudit._property_runner.search", nullptr);
  if (!cap || PyModule_AddObject(m, "search", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
