"""python -m course.bench p08: the benchmark."""
import sys

from course.bench import main

sys.exit(main())
