"""Flags of the GCP provider (absl only, so pkb can import it at start-up).

The core flags --project, --zone, --os_type, --owner, --machine_type and
--placement_group_style live in perfkitbenchmarker/flags.py; these are the
ones only the GCP provider reads.
"""

from absl import flags

flags.DEFINE_list(
    'gcp_ssh_source_range', [],
    'CIDR range(s) SSH is opened to, normally your own public address '
    '(e.g. 203.0.113.7/32). Required with --cloud=GCP: it is never guessed '
    'and never 0.0.0.0/0.')
flags.DEFINE_string(
    'gcp_network', None,
    'Existing auto-mode VPC network (e.g. default) to put the VMs in instead '
    'of a network created for the run. Its own firewall rules still apply '
    '(the default network opens SSH to 0.0.0.0/0), so the per-run network is '
    'the safer choice.')
flags.DEFINE_string(
    'gcp_compute_endpoint', None,
    'Compute API endpoint: https on *.googleapis.com (e.g. a Private '
    'Service Connect endpoint), called with the google-auth default '
    'credentials, or a loopback one such as http://127.0.0.1:8089 for a '
    'local fake, called without credentials.')
flags.DEFINE_string(
    'gcp_boot_disk_type', None,
    'Boot disk type (pd-balanced, pd-ssd, hyperdisk-balanced, ...); default: '
    'what the machine series supports.')
flags.DEFINE_string('gcp_ssh_user', 'pkb',
                    'Login user put in the instances\' ssh-keys metadata.')
