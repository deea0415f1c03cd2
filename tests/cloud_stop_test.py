"""A stop (Ctrl-C, the deadline) while a cloud call retries or waits.

A create retried after a rate limit pauses up to 30 s, and a GCP operation
is waited on up to 900 s; a stop ends both (the pause within a step, the
wait at its next answer), so no thread is left for teardown to wait out,
while teardown's own deletes, which begin after the stop, still retry and
wait. Scripted clocks, sleeps and Compute clients: no process, no network.
"""

import signal
import types
import uuid

import pytest

import lazy_modules

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import waits

# Imported when a test first uses them (lazy_modules).
compute_v1 = lazy_modules.Module('google.cloud.compute_v1')
compute_api = lazy_modules.Module(
    'perfkitbenchmarker.providers.gcp.compute_api')
gcp_network = lazy_modules.Module('perfkitbenchmarker.providers.gcp.network')
gcp_vm = lazy_modules.Module('perfkitbenchmarker.providers.gcp.vm')


class FakeTime:
  """A clock that moves only when slept on; the run is stopped once it
  passes `stop_at`."""

  def __init__(self, stop_at=None):
    self.now = 0.0
    self.stop_at = stop_at
    self.sleeps = []

  def clock(self):
    return self.now

  def sleep(self, seconds):
    self.sleeps.append(seconds)
    self.now += seconds
    if self.stop_at is not None and self.now - seconds < self.stop_at <= (
        self.now):
      run_processes.CountStop()  # What a signal's StopChildren counts.


class RateLimited(resource.BaseResource):
  """A resource whose every create and delete call is rate limited."""

  KIND = 'test_rate_limited'
  # Enough attempts for a long pause: 1, 2, 4, 8, 16 s between them.
  CREATE_RETRIES = DELETE_RETRIES = 6

  def __init__(self, time, stop_after_attempt=None):
    super().__init__('limited', sleep=time.sleep, clock=time.clock)
    self.attempts = []
    self._time = time
    self._stop_after_attempt = stop_after_attempt

  def _Call(self, what):
    self.attempts.append((what, self._time.now))
    if len(self.attempts) == self._stop_after_attempt:
      run_processes.CountStop()
    raise resource.RetryableError(f'{what}: 429 Rate Limit Exceeded')

  def _Create(self):
    self._Call('create')

  def _Delete(self):
    self._Call('delete')


def test_a_stop_wakes_a_create_from_its_retry_pause():
  # The stop lands 4.5 s into the 16 s pause before the sixth attempt.
  time = FakeTime(stop_at=1 + 2 + 4 + 8 + 4.5)
  limited = RateLimited(time)
  with pytest.raises(errors.ResourceError, match='the run was stopped'):
    limited.Launch()
  assert [what for what, _ in limited.attempts] == ['create'] * 5
  # Woken at the end of the step the stop landed in (waits.PAUSE_STEP_S:
  # 1 s), not at the end of the pause (31 s).
  assert time.now == 20


def test_a_stop_during_an_attempt_starts_no_pause_and_no_attempt():
  time = FakeTime()
  limited = RateLimited(time, stop_after_attempt=2)
  with pytest.raises(errors.ResourceError, match='not tried again'):
    limited.Launch()
  assert len(limited.attempts) == 2
  assert time.sleeps == [1.0]  # Only the pause before the second attempt.


def test_teardowns_delete_after_a_stop_still_retries_with_its_pauses():
  run_processes.CountStop()  # The run was stopped; teardown began after.
  time = FakeTime()
  limited = RateLimited(time)
  with pytest.raises(errors.ResourceError, match='after 6 attempts'):
    limited.Delete()
  assert [what for what, _ in limited.attempts] == ['delete'] * 6
  assert time.now == 1 + 2 + 4 + 8 + 16


# GCP operations ----------------------------------------------------------------


def _Nothing():
  pass


class ScriptedCompute:
  """The Compute calls of one kind of object (`collection`: a run's network,
  its instances) and of the operations service where they live (`zone`, or
  global), answered from a script: each `wait` answers the next (status,
  then) pair, calling then() first (e.g. the run's stop while the server
  holds the call). Every call is noted in order, and each must go out with
  its timeout (ComputeClients'); an insert or delete with a request_id
  (`request_ids`, in order)."""

  def __init__(self, *answers, collection='networks', zone=''):
    self.answers = list(answers)
    self.collection = collection
    self.zone = zone
    operations = 'zone_operations' if zone else 'global_operations'
    self.calls = []
    self.request_ids = []
    self.endpoint = None
    self.call_timeout_s = 7
    self.wait_timeout_s = 11
    setattr(self, collection, types.SimpleNamespace(
        insert_unary=lambda **kwargs: self._Sent('insert', **kwargs),
        delete_unary=lambda **kwargs: self._Sent('delete', **kwargs)))
    setattr(self, operations, types.SimpleNamespace(wait=self._Wait))

  def _Operation(self, name, status):
    return compute_v1.Operation(
        name=name, status=status, operation_type=name.split('-')[1],
        target_link=f'projects/p/{self.collection}/pkb-object',
        zone=self.zone)

  def _Sent(self, method, request, timeout='default', retry='default'):
    assert request['project'] == 'p'
    assert retry is None
    assert timeout == self.call_timeout_s  # Not the library's 600 s.
    assert uuid.UUID(request['request_id']).int
    self.request_ids.append(request['request_id'])
    self.calls.append(method)
    return self._Operation(f'op-{method}', 'RUNNING')

  def _Wait(self, project, operation, zone='', retry='default',
            timeout='default'):
    assert (project, zone) == ('p', self.zone)
    assert retry is None  # The call goes out once: a retry is the run's.
    assert timeout == self.wait_timeout_s
    self.calls.append(f'wait {operation}')
    assert self.answers, f'{self.calls}: one wait more than scripted'
    status, then = self.answers.pop(0)
    then()
    return self._Operation(operation, status)


def test_a_stop_ends_a_creates_operation_wait_with_its_insert_recorded(
    tmp_path):
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), 'stop1')
  compute = ScriptedCompute(('RUNNING', run_processes.CountStop),
                            ('DONE', _Nothing))
  net = gcp_network.GceNetwork('pkb-net', compute, 'p', record=record)
  with pytest.raises(errors.ResourceError,
                     match='op-insert .* not waited for: the run was stopped'):
    net.Create()
  # No second wait after the stop (it would have been held up to 2 min,
  # and the wait goes on up to 900 s).
  assert compute.calls == ['insert', 'wait op-insert']
  entry = record.FindResource('gcp_network', 'pkb-net')
  assert entry['status'] == 'creating'
  assert entry['data']['pending_insert'] == 'op-insert'


def test_teardown_waits_for_an_insert_cut_short_then_deletes(
    tmp_path, monkeypatch):
  # What the create above leaves (or a crash while it waited): the entry
  # and its insert, still running.
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), 'stop2')
  record.AddResource('gcp_network', 'pkb-net', project='p',
                     api_endpoint=None, pending_insert='op-insert')
  compute = ScriptedCompute(('RUNNING', _Nothing), ('DONE', _Nothing),
                            ('DONE', _Nothing))
  # Teardown from the record alone (its clients made for the recorded
  # endpoint are these).
  monkeypatch.setattr(compute_api.ComputeClients, 'Create',
                      lambda endpoint=None: compute)
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(record.run_dir)) == []
  # The delete goes out once the insert is done: one sent while GCE still
  # inserts is refused (resourceNotReady) or finds nothing yet (a 404,
  # taken for "already gone") and leaves the network behind.
  assert compute.calls == ['wait op-insert', 'wait op-insert', 'delete',
                           'wait op-delete']
  assert not list(run_record.RunRecord.Load(record.run_dir).LiveResources())


def test_a_stopped_instance_insert_is_in_its_vms_entry_for_teardown(
    tmp_path, monkeypatch):
  """An instance is recorded as its VM: the VM's entry holds the insert,
  and teardown from the record waits for it before the delete."""
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), 'stop3')
  compute = ScriptedCompute(('RUNNING', run_processes.CountStop),
                            collection='instances', zone='us-central1-a')
  zone = compute.zone
  vm = gcp_vm.GceVirtualMachine(
      virtual_machine.VmSpec(cloud='GCP', machine_type='n2-standard-2',
                             zone=zone),
      'pkb-stop3-clients-0', 'clients', clients=compute, project='p',
      config=gcp_vm.InstanceConfig(
          project='p', zone=zone, machine_type='n2-standard-2',
          network_url='projects/p/global/networks/pkb-stop3'),
      run_uri='stop3', record=record)
  vm.image = 'projects/debian-cloud/global/images/debian-12-v20261101'
  vm.ssh_public_key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPkb test'
  with pytest.raises(errors.ResourceError, match='not waited for'):
    vm.Create()
  assert compute.calls == ['insert', 'wait op-insert']
  entry = record.FindResource('gcp_vm', vm.name)
  assert entry['status'] == 'creating'
  assert entry['data']['pending_insert'] == 'op-insert'

  compute.calls.clear()
  compute.answers = [('DONE', _Nothing), ('DONE', _Nothing)]
  monkeypatch.setattr(compute_api.ComputeClients, 'Create',
                      lambda endpoint=None: compute)
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(record.run_dir)) == []
  assert compute.calls == ['wait op-insert', 'delete', 'wait op-delete']


def test_teardowns_delete_waits_for_its_operation_through_a_stop():
  compute = ScriptedCompute(('RUNNING', run_processes.CountStop),
                            ('RUNNING', _Nothing), ('DONE', _Nothing))
  gcp_network.GceNetwork('pkb-net', compute, 'p').Delete()
  assert compute.calls == ['delete', 'wait op-delete', 'wait op-delete',
                           'wait op-delete']


def test_a_second_signal_in_teardown_wakes_its_waits():
  """A first signal during cleanup and teardown is only noted (they go on);
  a second cuts them short. It raised in the main thread only: a delete's
  loop in a teardown thread (up to 300 s of not-ready retries on GCP) went
  on, and the cut-short run waited it out. It now counts a stop too, which
  wakes every retry pause and ends every wait begun before it."""
  interrupts = run_signals.Interrupts('cut1')
  interrupts.Arm()
  interrupts.Protect()
  in_teardown = waits.RunStopped()  # a teardown thread's delete loop
  try:
    interrupts._Handle(signal.SIGINT, None)  # pylint: disable=protected-access
    assert not in_teardown()
    with pytest.raises(errors.RunInterrupted, match='cut short'):
      interrupts._Handle(signal.SIGTERM, None)  # pylint: disable=protected-access
  finally:
    interrupts.Restore()
  assert in_teardown()
