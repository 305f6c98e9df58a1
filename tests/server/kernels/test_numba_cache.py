"""A change to any module with compiled code makes numba's whole on-disk cache stale
(server.kernels.cache): numba itself checks only a function's own file."""

from __future__ import annotations

from server.kernels import cache as numba_cache


def test_the_cache_is_purged_when_a_module_with_compiled_code_changes(tmp_path):
    (tmp_path / "kernels.py").write_text("from numba import njit\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    made = [cache / "kernels.f-1.py311.nbi", cache / "kernels.f-1.py311.1.nbc"]
    for path in made:
        path.write_bytes(b"compiled")
    bytecode = cache / "plain.cpython-311.pyc"
    bytecode.write_bytes(b"bytecode")
    assert numba_cache.purge_if_stale(tmp_path)  # no fingerprint yet: stale
    assert not any(path.exists() for path in made)
    for path in made:
        path.write_bytes(b"compiled")
    assert not numba_cache.purge_if_stale(tmp_path)  # unchanged: kept
    assert all(path.exists() for path in made)
    (tmp_path / "plain.py").write_text("x = 2\n")  # no numba code: still current
    assert not numba_cache.purge_if_stale(tmp_path)
    (tmp_path / "kernels.py").write_text("from numba import njit\n# changed\n")
    assert numba_cache.purge_if_stale(tmp_path)
    assert not any(path.exists() for path in made)
    assert bytecode.exists()  # only numba's files go


def test_a_cache_that_cannot_be_written_does_not_stop_the_server(tmp_path):
    # As in a read-only install (a file where __pycache__ would be fails as root too).
    (tmp_path / "kernels.py").write_text("from numba import njit\n")
    (tmp_path / "__pycache__").write_text("not a directory")
    assert not numba_cache.purge_if_stale(tmp_path)


def test_a_cache_kept_in_numba_cache_dir_is_purged_there(tmp_path):
    # NUMBA_CACHE_DIR, as a read-only install uses it: a directory per package, named by numba.
    import hashlib
    import os

    from numba.core.caching import _CacheLocator

    code, cache_dir = tmp_path / "code", tmp_path / "numba-cache"
    (code / "sub").mkdir(parents=True)
    (code / "kernels.py").write_text("from numba import njit\n")
    (code / "sub" / "more.py").write_text("x = 1\n")
    named = [
        cache_dir / _CacheLocator.get_suitable_cache_subpath(str(package / "x.py"))
        for package in (code, code / "sub")
    ]
    assert numba_cache.cache_dirs(code, str(cache_dir)) == named
    assert named[0].name == f"code_{hashlib.sha1(os.path.abspath(code).encode()).hexdigest()}"
    for folder in named:
        folder.mkdir(parents=True)
        (folder / "kernels.f-1.py311.nbi").write_bytes(b"compiled")
    assert numba_cache.purge_if_stale(code, str(cache_dir))
    assert not list(cache_dir.rglob("*.nbi"))
    assert (named[0] / numba_cache.STAMP).exists() and not (code / "__pycache__").exists()
    (named[1] / "kernels.f-1.py311.nbi").write_bytes(b"compiled")
    assert not numba_cache.purge_if_stale(code, str(cache_dir))  # current: kept
    (code / "kernels.py").write_text("from numba import njit\n# changed\n")
    assert numba_cache.purge_if_stale(code, str(cache_dir))
    assert not list(cache_dir.rglob("*.nbi"))
