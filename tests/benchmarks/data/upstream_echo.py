"""A TCP echo server and client, pushed by upstream_client_server_benchmark.

server PORT_FILE MAX_SECONDS: listens on an ephemeral port of every
address, writes the port to PORT_FILE, echoes each line back, and exits
when a client sends "quit" or MAX_SECONDS have passed (never left running).
client HOST PORT COUNT: COUNT round trips of one line; prints key=value
lines: round_trips, mean_us, p50_us, p99_us, max_us.
quit HOST PORT: tells the server to exit.
"""

import os
import socket
import sys
import time


def Serve(port_file, max_seconds):
  deadline = time.monotonic() + max_seconds
  with socket.create_server(('', 0), family=socket.AF_INET) as server:
    server.settimeout(1.0)
    tmp = port_file + '.tmp'
    with open(tmp, 'w') as f:
      f.write(str(server.getsockname()[1]))
    os.replace(tmp, port_file)
    while time.monotonic() < deadline:
      try:
        conn, _ = server.accept()
      except socket.timeout:
        continue
      with conn, conn.makefile('rwb') as stream:
        conn.settimeout(max(1.0, deadline - time.monotonic()))
        for line in stream:
          if line.strip() == b'quit':
            return
          stream.write(line)
          stream.flush()


def Measure(host, port, count):
  latencies = []
  with socket.create_connection((host, port), timeout=10) as conn:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = conn.makefile('rwb')
    for i in range(count):
      start = time.perf_counter()
      stream.write(b'ping %d\n' % i)
      stream.flush()
      if stream.readline() != b'ping %d\n' % i:
        sys.exit(f'round trip {i} did not come back')
      latencies.append((time.perf_counter() - start) * 1e6)
  latencies.sort()
  print(f'round_trips={len(latencies)}')
  print(f'mean_us={sum(latencies) / len(latencies):.1f}')
  print(f'p50_us={latencies[len(latencies) // 2]:.1f}')
  print(f'p99_us={latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)]:.1f}')
  print(f'max_us={latencies[-1]:.1f}')


if __name__ == '__main__':
  if sys.argv[1] == 'server':
    Serve(sys.argv[2], float(sys.argv[3]))
  elif sys.argv[1] == 'quit':
    with socket.create_connection((sys.argv[2], int(sys.argv[3])), 10) as c:
      c.sendall(b'quit\n')
  else:
    Measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
