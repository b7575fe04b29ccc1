"""Reads and checks a cluster-in-a-box spec for scripts/sim_cluster.sh.

A spec is a YAML mapping from machine name to machine:

    desktop: {cpus: 1.2, link: 1gbit, roles: [scheduler, server, trainer]}
    mac:     {cpus: 0.3, link: 300mbit, roles: [trainer], stall: {every: 20, for: 4}}

Prints one line per machine for the shell, fields separated by tabs:
    NAME  CPUS  LINK  THREADS  LOCAL_STEPS  STALL_EVERY_S  STALL_FOR_S  STALL_CPUS  ROLES
(LINK "-" for no limit, STALL_* "0" for none, ROLES comma-separated in order), or exits 2 with
one line naming the file, the machine and the field that is wrong.

    sim_spec.py SPEC CORES [ONLY [LOCAL_STEPS]]
        ONLY: comma-separated machines to keep (the others dropped; empty: all)
        LOCAL_STEPS: NAME=N,... sets those machines' local_steps over the spec's
"""
import re
import sys

import yaml

FIELDS = {"cpus", "link", "roles", "threads", "local_steps", "stall"}
STALL_FIELDS = {"every", "for", "cpus"}
ROLES = ("scheduler", "server", "trainer")
NAME = re.compile(r"^[a-z][a-z0-9-]{0,15}$")
RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit)$")
RATE_BITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
MAX_MACHINES = 200  # one /24 of addresses on the bridge


class SpecError(Exception):
    pass


def number(value, where, low, high):
    # YAML reads 1 as int and true as bool; only real numbers are budgets or durations.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{where} must be a number, not {value!r}")
    if not low <= value <= high:
        raise SpecError(f"{where} is {value}; it must be between {low} and {high}")
    return float(value)


def check_link(value, where):
    if value is None or value == "none":
        return "-"
    match = RATE.match(str(value).strip().lower())
    if not match:
        raise SpecError(f"{where} is {value!r}; give a rate such as 1gbit, 300mbit or 512kbit "
                        "(or none for no limit)")
    bits = float(match.group(1)) * RATE_BITS[match.group(2)]
    if not 64e3 <= bits <= 100e9:
        raise SpecError(f"{where} is {value!r}; it must be between 64kbit and 100gbit")
    return match.group(0)


def check_stall(value, where, cpus):
    if value is None:
        return 0.0, 0.0, 0.0
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a mapping such as {{every: 20, for: 4}}, not {value!r}")
    unknown = sorted(set(map(str, value)) - STALL_FIELDS)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]} is not a field (fields: every, for, cpus)")
    for key in ("every", "for"):
        if key not in value:
            raise SpecError(f"{where}.{key} is missing (seconds)")
    every = number(value["every"], f"{where}.every", 1, 3600)
    length = number(value["for"], f"{where}.for", 0.1, 3600)
    if length >= every:
        raise SpecError(f"{where}.for ({length:g} s) must be shorter than its every ({every:g} s)")
    # 0 freezes the machine; a budget below its own throttles it instead.
    throttle = number(value.get("cpus", 0), f"{where}.cpus", 0, cpus)
    if 0 < throttle < 0.1:
        raise SpecError(f"{where}.cpus is {throttle:g}; use 0 (frozen) or at least 0.1")
    if throttle == cpus:
        raise SpecError(f"{where}.cpus equals the machine's cpus ({cpus:g}): that is no stall")
    return every, length, throttle


def whole(machine, key, where, high):
    value = int(number(machine.get(key, 1), f"{where}: {key}", 1, high))
    if machine.get(key, 1) != value:
        raise SpecError(f"{where}: {key} must be a whole number")
    return value


def check_machine(name, machine, where):
    if not NAME.match(str(name)):
        raise SpecError(f"machine name {name!r}: use 1-16 lower-case letters, digits and '-', "
                        "starting with a letter")
    if not isinstance(machine, dict):
        raise SpecError(f"{where} must be a mapping such as {{cpus: 1.0, link: 1gbit, roles: [trainer]}}")
    unknown = sorted(set(map(str, machine)) - FIELDS)
    if unknown:
        raise SpecError(f"{where}: {unknown[0]} is not a field (fields: {', '.join(sorted(FIELDS))})")
    if "cpus" not in machine:
        raise SpecError(f"{where}: cpus is missing (the machine's CPU budget in cores, e.g. 0.5)")
    cpus = number(machine["cpus"], f"{where}: cpus", 0.01, 1024)
    link = check_link(machine.get("link"), f"{where}: link")
    roles = machine.get("roles")
    if not isinstance(roles, list) or not roles:
        raise SpecError(f"{where}: roles must be a non-empty list of {', '.join(ROLES)}")
    for role in roles:
        if role not in ROLES:
            raise SpecError(f"{where}: roles has {role!r}; roles are {', '.join(ROLES)}")
    if roles.count("scheduler") > 1:
        raise SpecError(f"{where}: roles lists scheduler twice; a job has one scheduler")
    threads = whole(machine, "threads", where, 256)
    local_steps = whole(machine, "local_steps", where, 1024)
    every, length, throttle = check_stall(machine.get("stall"), f"{where}: stall", cpus)
    return [name, f"{cpus:g}", link, str(threads), str(local_steps), f"{every:g}", f"{length:g}",
            f"{throttle:g}", ",".join(roles)]


def override_local_steps(machines, spec, local_steps):
    for item in local_steps.split(","):
        name, _, value = item.partition("=")
        where = f"--local-steps {item}"
        if name not in spec:
            raise SpecError(f"{where}: '{name}' is not one of its machines ({', '.join(map(str, spec))})")
        if not value.isdigit() or not 1 <= int(value) <= 1024:
            raise SpecError(f"{where}: give NAME=N with N from 1 to 1024")
        for m in machines:
            if m[0] == name:
                m[4] = str(int(value))


def read_spec(path, cores, only, local_steps=""):
    try:
        with open(path) as f:
            spec = yaml.safe_load(f)
    except OSError as e:
        raise SpecError(f"cannot read it: {e.strerror}")
    except yaml.YAMLError as e:
        raise SpecError("not valid YAML: " + " ".join(str(e).split()))
    if not isinstance(spec, dict) or not spec:
        raise SpecError("it must map machine names to machines, e.g. "
                        "desktop: {cpus: 1.2, link: 1gbit, roles: [server, trainer]}")
    if len(spec) > MAX_MACHINES:
        raise SpecError(f"it has {len(spec)} machines; at most {MAX_MACHINES}")
    machines = [check_machine(name, machine, f"machine '{name}'") for name, machine in spec.items()]
    if local_steps:
        override_local_steps(machines, spec, local_steps)
    if only:
        wanted = only.split(",")
        for name in wanted:
            if name not in spec:
                raise SpecError(f"--only names '{name}', which is not one of its machines "
                                f"({', '.join(map(str, spec))})")
        machines = [m for m in machines if m[0] in wanted]
    total = sum(float(m[1]) for m in machines)
    if total > cores + 1e-9:
        raise SpecError(f"the machines' cpus add up to {total:g}, more than the {cores} cores "
                        "here; lower some budgets")
    roles = [role for m in machines for role in m[8].split(",")]
    for role in ("server", "trainer"):
        if role not in roles:
            raise SpecError(f"no machine has the role {role}; a job needs at least one")
    if roles.count("scheduler") > 1:
        holders = [m[0] for m in machines if "scheduler" in m[8].split(",")]
        raise SpecError(f"machines {', '.join(holders)} all have the role scheduler; give it to one")
    if "scheduler" not in roles:
        # Without a choice the scheduler goes where the first server is, as on a small cluster.
        first = next(m for m in machines if "server" in m[8].split(","))
        first[7] = "scheduler," + first[7]
    return machines


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit("usage: sim_spec.py SPEC CORES [ONLY [LOCAL_STEPS]]")
    path, cores = sys.argv[1], int(sys.argv[2])
    only = sys.argv[3] if len(sys.argv) >= 4 else ""
    local_steps = sys.argv[4] if len(sys.argv) == 5 else ""
    try:
        machines = read_spec(path, cores, only, local_steps)
    except SpecError as e:
        print(f"sim_cluster.sh: spec {path}: {e}", file=sys.stderr)
        sys.exit(2)
    for machine in machines:
        print("\t".join(machine))


if __name__ == "__main__":
    main()
