"""Installed programs: one module per program, each with Install(vm).

Extension seam: a module here exposes `Install(vm)` (and may expose helpers
to start, query and stop its program); `vm.Install('<module>')` runs it once
per VM.
"""
