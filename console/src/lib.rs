//! valp: the VALP operator console and its command line.
