"""Pure game engines for pbem: no Flask, no database, no clock, no I/O."""
