"""Fake upstream (tests only): --run_stage, parsed to a list as upstream's
RunStageParser does ('all' is every stage)."""

from absl import flags

STAGES = ['provision', 'prepare', 'run', 'cleanup', 'teardown']


class _Parser(flags.ListParser):

  def parse(self, argument):
    stages = super().parse(argument)
    return list(STAGES) if stages == ['all'] else stages


flags.DEFINE(_Parser(), 'run_stage', STAGES, 'fake upstream flag',
             serializer=flags.CsvListSerializer(','))
