"""The Static provider: existing machines listed in --static_vm_file.

provider.py reads the file (PKB's static VM format), builds one
ssh_vm.SshVirtualMachine per machine and registers the 'static_vm' kind so a
later `--run_stage=teardown --run_uri=X` can stop the run's Redis processes on
them and clean their scratch directories. No cloud API is called.
"""
