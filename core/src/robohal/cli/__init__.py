"""The ``robohal`` command and the applications behind its subcommands.

- :mod:`.main`: the command line (``robohal plugins | models | fk | ik | sim | demo | jog | draw | hil |
  new-plugin``)
- :mod:`.demo`, :mod:`.jog`, :mod:`.drawing`: what ``demo``, ``jog`` and ``draw`` run
- :mod:`.hil`, :mod:`.report`: running the HIL suites and reporting on them
- :mod:`.scaffold`: ``new-plugin``
- :mod:`.plots`: plots of motion results
"""
