"""LAVA's own validators on the generated files (scripts/lava-local --validate, through
`cachescope-xtask lava-local`): each job with lava_common.schemas.validate(job, strict=True), each
device dictionary with lava_common's device schema.

usage: python3 lava_validate.py JOB.yaml... -- DEVICE.yaml...   (exit 0 all valid, 1 otherwise)
"""
import sys, yaml
from voluptuous import Invalid
from lava_common.schemas import validate
from lava_common.schemas.device import validate as validate_device
args = sys.argv[1:]
split = args.index("--")
bad = 0
for path, check in [(p, lambda d: validate(d, strict=True)) for p in args[:split]] + [(p, validate_device) for p in args[split + 1:]]:
    try:
        check(yaml.safe_load(open(path)))
    except Invalid as e:
        bad += 1
        print(f"lava-local: INVALID {path}: {e} (at {'/'.join(map(str, e.path))})", file=sys.stderr)
print(f"lava-local: {len(args) - 1 - bad} of {len(args) - 1} files valid (lava_common strict job schema; device schema)", file=sys.stderr)
sys.exit(1 if bad else 0)
