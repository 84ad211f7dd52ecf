"""Opening listed input files safely, and naming them whatever bytes their names are.

No TFX and no Beam here. A landing folder holds what users put there: FIFOs, sockets, devices,
dangling links, files still being copied or deleted, names in no valid encoding. Only regular
files are read, and the check comes before any read: `open()` on a FIFO blocks until a writer
appears (for ever, holding the run's lock). The file is stat-ed first, then opened with
O_NONBLOCK (so that a FIFO swapped in after the stat cannot block the open either), and the
open descriptor is checked again to be the regular file that was stat-ed. A file that vanishes
or changes while it is read is a rejection (`vanished`, `changed`), never a crash.

Names that are not valid UTF-8 are read too: Python lists a local folder with undecodable bytes
as surrogate escapes (PEP 383), so a name is a `str` everywhere, and rules.name_bytes gives
back its exact bytes for the Examples and the quarantine (see rules.py).
"""
import errno
import glob
import os
import stat
from typing import List


from components.ingest.formats import rules

def gfile():
    """tf.io.gfile, for gs://, hdfs://, ... paths: imported on first use, so that the config
    (which imports this module's users for their defaults) stays free of TensorFlow."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return tf.io.gfile


def listdir(folder: str) -> List[str]:
    """The entry names of a folder. Local folders are listed by Python, which returns names
    that are not UTF-8 as surrogate escapes; tf.io.gfile (used for gs://, hdfs://, ...) raises
    UnicodeDecodeError on them."""
    if '://' in folder:
        return [name.rstrip('/') for name in gfile().listdir(folder)]
    return os.listdir(folder)


def isdir(path: str) -> bool:
    return gfile().isdir(path) if '://' in path else os.path.isdir(path)


def glob_files(folder: str, pattern: str) -> List[str]:
    """The entries of `folder` matching a glob pattern (see listdir for why not tf.io.gfile)."""
    if '://' in folder:
        return gfile().glob(os.path.join(folder, pattern))
    return glob.glob(os.path.join(glob.escape(folder), pattern))


def to_beam(path: str):
    """A path as a Beam element: Beam's coders encode text as strict UTF-8, so a name listed
    with surrogate escapes travels as its bytes (from_beam turns it back)."""
    return path if is_utf8(path) else rules.name_bytes(path)


def from_beam(element) -> str:
    return os.fsdecode(element) if isinstance(element, bytes) else element


def is_utf8(name: str) -> bool:
    """False for a name listed with undecodable bytes (surrogate escapes)."""
    return rules.display_name(name) == name


# What a non-regular entry is, for the rejection's detail.
_KINDS = ((stat.S_ISDIR, 'a folder'), (stat.S_ISFIFO, 'a named pipe (FIFO)'),
          (stat.S_ISSOCK, 'a socket'), (stat.S_ISCHR, 'a character device'),
          (stat.S_ISBLK, 'a block device'))


def kind(mode: int) -> str:
    """'a regular file', 'a named pipe (FIFO)', ... for an st_mode."""
    if stat.S_ISREG(mode):
        return 'a regular file'
    return next((name for test, name in _KINDS if test(mode)), 'not a regular file')


def _reject_kind(mode: int) -> rules.BadRecord:
    if stat.S_ISDIR(mode):
        return rules.BadRecord('not_a_file',
                               'is a folder; images must sit directly in a class folder '
                               '(or, to be scored, in the folder scored)')
    return rules.BadRecord('not_a_file', f'is {kind(mode)}, not a regular file; not opened')


def check_regular(path: str) -> os.stat_result:
    """The stat of the regular file `path` (following links), or BadRecord with its type:
    a dangling link, a FIFO, a socket, a device, a folder, or a file that vanished."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        raise rules.BadRecord('vanished', 'listed, then gone before it was read') from None
    try:
        target = os.stat(path)
    except FileNotFoundError:
        raise rules.BadRecord('unreadable', 'a dangling symlink, to '
                              f'{rules.display_name(os.readlink(path))}: No such file or '
                              'directory') from None
    del link  # only tells a vanished entry from a dangling link
    if not stat.S_ISREG(target.st_mode):
        raise _reject_kind(target.st_mode)
    return target


def read_regular(path: str) -> bytes:
    """The bytes of the regular file `path`, read without ever blocking; BadRecord otherwise.

    OSErrors other than vanishing (permission denied, I/O error) propagate: the caller names
    them as `unreadable`.
    """
    before = check_regular(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_CLOEXEC', 0))
    except FileNotFoundError:
        raise rules.BadRecord('vanished', 'listed, then gone before it was read') from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket or FIFO without a peer, swapped in
            raise rules.BadRecord('changed', 'replaced by a non-regular file while '
                                  'being read') from None
        raise
    with os.fdopen(fd, 'rb') as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                before.st_dev, before.st_ino):
            raise rules.BadRecord('changed', f'replaced by {kind(opened.st_mode)} between '
                                  'listing and reading')
        data = handle.read()
        after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (opened.st_size, opened.st_mtime_ns) or \
            len(data) != after.st_size:
        raise rules.BadRecord('changed', f'changed while being read ({opened.st_size} bytes '
                                f'when opened, {after.st_size} after, {len(data)} read)')
    return data


def fingerprint(split_name: str, pattern: str) -> str:
    """TFX's input fingerprint (tfx.utils.io_utils.generate_fingerprint: files, bytes and
    mtimes of the matched files), computed with Python's glob, which lists local names that
    are not UTF-8 (tf.io.gfile.glob raises on them). An entry that vanishes is left out."""
    total = xor_sum = plain_sum = count = 0
    for path in glob.glob(pattern):
        try:
            info = os.stat(path)
        except OSError:
            continue
        count += 1
        total += info.st_size
        mtime = int(info.st_mtime)
        xor_sum ^= mtime
        plain_sum += mtime
    return (f'split:{split_name},num_files:{count},total_bytes:{total},'
            f'xor_checksum:{xor_sum},sum_checksum:{plain_sum}')
