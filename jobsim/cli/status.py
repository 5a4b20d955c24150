"""The command line's exit statuses."""

#: 0 all is well; 1 an invariant or an expectation failed; 2 bad input (a scenario file, a
#: flag), reported without a traceback
OK, FAILED, BAD_INPUT = 0, 1, 2
