"""Which database a store is: ``--store`` / ``--genai-store`` / ``GENAI_STORE``, else a SQLite file in user data."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

ENV = "GENAI_STORE"
FILE_NAME = "results.sqlite"
APP = "pytest-genai"


def default_url(env: Mapping[str, str] | None = None) -> str:
    """``GENAI_STORE`` when set, else the SQLite file in the user data folder."""
    env = os.environ if env is None else env
    if given := env.get(ENV, "").strip():
        return normalize_url(given)
    try:
        import platformdirs
    except ImportError:
        folder = Path(env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")) / APP
    else:
        folder = Path(platformdirs.user_data_dir(APP))
    return file_url(str(folder / FILE_NAME))


def file_url(path: str) -> str:
    """The SQLite URL of exactly the file ``path`` (``%``, ``?`` and ``#`` quoted so no URI parameters are read)."""
    from urllib.parse import quote

    return "sqlite:///" + quote(os.path.abspath(os.path.expanduser(path)), safe="/")


def given_or_default(url: str | None) -> str:
    """The store a ``--store URL`` option names: ``url`` when given, else :func:`default_url`."""
    return normalize_url(url) if url else default_url()


def normalize_url(text: str) -> str:
    """A SQLAlchemy URL as given; a plain path is a SQLite file (``results.sqlite`` -> ``sqlite:////abs/...``)."""
    text = str(text).strip()
    if not text:
        from .errors import StoreError  # a ValueError too: option parsers report it as bad input

        raise StoreError("an empty store URL (--store, --genai-store); give a SQLAlchemy URL (sqlite:///PATH, "
                         "postgresql+psycopg://...) or a file path")
    if "://" in text:
        check_holds_a_file(text)
        return text
    return file_url(text)  # a plain path means that file, always


def check_holds_a_file(url: str) -> None:
    """Refuse a SQLite URL naming no file (runs kept in memory) or with query arguments SQLite ignores there."""
    from .errors import StoreError

    if not is_sqlite(url):
        return
    rest = url.split("://", 1)[1]
    path, _, query = rest[1:].partition("?") if rest.startswith("/") else ("", "", rest.partition("?")[2])
    if not path.strip() or path == ":memory:" or path.startswith("file::memory:") or (
            path.startswith("file:") and re.search(r"(^|&)mode=memory(&|$)", query)):
        raise StoreError(f"store {store_label(url)}: names no database file (SQLite would keep the runs in memory and "
                         "lose them at exit; is a variable in the URL unset?); give sqlite:///PATH or a file path")
    ignored = sorted(set(re.findall(r"(?:^|&)([^=&]+)", query)) - _DRIVER_ARGS) if query else []
    uri = bool(re.search(r"(^|&)uri=(true|1)(&|$)", query, re.IGNORECASE))
    if (ignored and not uri) or (uri and not path.startswith("file:")):
        raise StoreError(f"store {store_label(url)}: SQLite reads {', '.join(ignored) or 'uri'} only in a file: URI "
                         "with uri=true; here the file would be opened as if they were not there (mode=ro would still "
                         "write); give sqlite:///file:PATH?mode=ro&uri=true, or the file's path alone")


# the query arguments SQLAlchemy's pysqlite driver takes without ``uri=true``
_DRIVER_ARGS = {"timeout", "isolation_level", "detect_types", "check_same_thread", "cached_statements", "uri"}


def shown_url(url: str) -> str:
    """``url`` without its password, for messages and reports."""
    return re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", url)


def store_label(url: str) -> str:
    """How messages name a store: a plain SQLite file as its path, any other URL without its password."""
    path = sqlite_file(url) if "?" not in url else None
    return path if path is not None and not path.startswith("file:") else shown_url(url)


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_file(url: str | None) -> str | None:
    """The database file of a ``sqlite:///PATH`` URL (without its ``?query``), else None."""
    if not url or not url.startswith("sqlite:///"):
        return None
    from urllib.parse import unquote

    path = unquote(url[len("sqlite:///"):].split("?", 1)[0])  # SQLAlchemy unquotes the database part too
    return path if path and path != ":memory:" else None
