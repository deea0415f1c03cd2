"""GCP provider: Compute Engine VMs through the google-cloud-compute API.

Modules, one concern each:
  flags.py        the --gcp_* flags (absl only; imported by pkb at start-up);
  compute_api.py  clients, operation waiting, error mapping, and GceResource,
                  the BaseResource shape every Compute object here shares;
  images.py       --os_type -> public image family and project;
  naming.py       run-scoped names and GCP-legal labels;
  keys.py         the run's SSH key pair (a resource, so teardown removes it);
  network.py      network, subnetworks, firewall rules, placement policy;
  vm.py           GceVirtualMachine, an SshVirtualMachine on an instance;
  provider.py     the provider contract: ConstructVms, Provision,
                  CheckPrerequisites.
"""
