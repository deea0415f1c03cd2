"""The `chromium` pytest fixture: one headless Chromium per test module.

The report tests look at pages in Debian's chromium: the DOM once the page
has loaded (their measuring scripts write what they measured into it) and
a screenshot of a window's size. Each look was a chromium launch of its
own (`--dump-dom`, `--screenshot`): 1.35 CPU-s a launch (its processes
counted in a cgroup), 19 launches in a suite. A browser kept for the
module takes 1.2 CPU-s to start and 0.3 a page, each page in a tab of its
own: what the switches did, asked over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages ended by a NUL byte, the browser
reading fd 3 and writing fd 4): a viewport of the window's size,
scrollbars hidden, the page loaded, then its DOM serialized or the
viewport captured.

No library: Playwright (165 MB with its Node driver; the browser is
Debian's either way) took 4.1 CPU-s for two pages and their screenshots,
what four launches took 5.4 for and this pipe 2.5.
"""

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time

import pytest

import e2e_support

# A hang guard per call (each launch had 90 s); loading a report is ~1 s.
CALL_TIMEOUT_S = 90
FLAGS = ('--headless', '--no-sandbox', '--disable-gpu',
         '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run', '--hide-scrollbars')


def Find():
  return shutil.which('chromium') or shutil.which('chromium-browser')


NEEDED = e2e_support.Needs('chromium', lambda: Find() is not None,
                           'scripts/setup.sh')


class Chromium:
  """A headless Chromium driven over a DevTools pipe; one page at a time."""

  def __init__(self, directory: str, program: str):
    self._log = os.path.join(directory, 'chromium.log')
    to_browser, self._to = os.pipe()
    self._from, from_browser = os.pipe()
    # The browser's ends above fd 9, so that moving them to fds 3 and 4
    # (bash, below) overwrites neither.
    ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            for fd in (to_browser, from_browser)]
    os.close(to_browser)
    os.close(from_browser)
    try:
      with open(self._log, 'wb') as log:
        self._proc = subprocess.Popen(
            ['bash', '-c', 'exec "$0" "$@" 3<&{0} 4>&{1} {0}<&- {1}>&-'
             .format(*ends), program, *FLAGS,
             f'--user-data-dir={os.path.join(directory, "profile")}',
             '--remote-debugging-pipe'],
            pass_fds=ends, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    finally:
      for fd in ends:
        os.close(fd)
    self._pending = b''
    self._last_id = 0
    self._events = []

  def Dom(self, url: str, width: int, height: int) -> str:
    """The page's DOM once it has loaded (its load handlers run), as
    --dump-dom printed it, in a window of width x height."""
    with self._Tab(url, width, height) as session:
      return self._Call('Runtime.evaluate', session,
                        expression='document.documentElement.outerHTML',
                        returnByValue=True)['result']['value']

  def Screenshot(self, url: str, path: str, width: int, height: int) -> None:
    """A PNG of a width x height window on the loaded page, to `path`."""
    with self._Tab(url, width, height) as session:
      data = self._Call('Page.captureScreenshot', session, format='png')
    with open(path, 'wb') as f:
      f.write(base64.b64decode(data['data']))

  def Close(self) -> None:
    try:
      if self._proc.poll() is None:
        self._Send('Browser.close')
        self._proc.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
      with contextlib.suppress(ProcessLookupError):
        os.killpg(self._proc.pid, signal.SIGKILL)
      self._proc.wait()
    finally:
      os.close(self._to)
      os.close(self._from)

  @contextlib.contextmanager
  def _Tab(self, url, width, height):
    """A tab of its own, width x height, on `url` loaded; closed after."""
    target = self._Call('Target.createTarget', url='about:blank')['targetId']
    session = None
    try:
      session = self._Call('Target.attachToTarget', targetId=target,
                           flatten=True)['sessionId']
      self._Call('Page.enable', session)
      self._Call('Emulation.setDeviceMetricsOverride', session, width=width,
                 height=height, deviceScaleFactor=1, mobile=False)
      self._Call('Emulation.setScrollbarsHidden', session, hidden=True)
      navigated = self._Call('Page.navigate', session, url=url)
      if 'errorText' in navigated:
        raise RuntimeError(f'chromium: {url}: {navigated["errorText"]}')
      # The load event's handlers (a test's measuring script) have run by
      # then, as --dump-dom waited for them; and what is asked of the page
      # next runs on its thread after them.
      self._Await('Page.loadEventFired', session)
      yield session
    except BaseException:
      self._CloseTab(target, session, quietly=True)  # The first error says.
      raise
    self._CloseTab(target, session)

  def _CloseTab(self, target, session, quietly=False):
    self._events = [m for m in self._events if m.get('sessionId') != session]
    try:
      self._Call('Target.closeTarget', targetId=target)
    except (OSError, RuntimeError):  # TimeoutError is an OSError.
      if not quietly:
        raise

  def _Send(self, method, session=None, **params):
    self._last_id += 1
    message = {'id': self._last_id, 'method': method, 'params': params}
    if session:
      message['sessionId'] = session
    data = json.dumps(message).encode() + b'\0'
    while data:
      data = data[os.write(self._to, data):]
    return self._last_id

  def _Call(self, method, session=None, **params):
    sent = self._Send(method, session, **params)
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
      message = self._Read(deadline, method)
      if message.get('id') == sent:
        if 'error' in message:
          raise RuntimeError(f'chromium: {method}: {message["error"]}')
        return message['result']
      if 'method' in message:
        self._events.append(message)

  def _Await(self, event, session):
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
      for message in self._events:
        if (message['method'] == event and
            message.get('sessionId') == session):
          self._events.remove(message)
          return message
      message = self._Read(deadline, event)
      if 'method' in message:
        self._events.append(message)

  def _Read(self, deadline, waiting_for):
    while b'\0' not in self._pending:
      left = deadline - time.monotonic()
      if left <= 0 or not select.select([self._from], [], [], left)[0]:
        raise TimeoutError(f'chromium: no {waiting_for} in '
                           f'{CALL_TIMEOUT_S} s{self._LogTail()}')
      chunk = os.read(self._from, 1 << 20)
      if not chunk:
        raise RuntimeError(f'chromium ended (waiting for {waiting_for})'
                           f'{self._LogTail()}')
      self._pending += chunk
    message, self._pending = self._pending.split(b'\0', 1)
    return json.loads(message)

  def _LogTail(self):
    with open(self._log, errors='replace') as f:
      return ': ' + f.read()[-2000:]


@pytest.fixture(scope='module')
def chromium(tmp_path_factory):
  program = Find()
  if program is None:
    e2e_support.Unavailable('chromium', 'scripts/setup.sh')
  browser = Chromium(str(tmp_path_factory.mktemp('chromium')), program)
  yield browser
  browser.Close()
