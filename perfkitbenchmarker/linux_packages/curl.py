"""curl, in upstream PKB's package shape: AptInstall and YumInstall.

vm.Install('curl') runs the one for the VM's package manager; each asks the
VM for the OS package (vm.InstallPackages: already there costs one check;
a Local VM installs nothing and says what to install).
"""


def AptInstall(vm) -> None:
  vm.InstallPackages('curl')


YumInstall = AptInstall  # vm.InstallPackages knows the VM's package manager.
