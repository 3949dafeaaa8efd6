"""Never finishes: for the --timeout test (torch is not even imported)."""

import time

time.sleep(600)
