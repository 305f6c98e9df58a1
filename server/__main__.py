"""Command line: serve the API, or manage keys.

python -m server [--build DIR] [--host H] [--port P] [--keys-file F] [--workers N]
python -m server --build-from s3://BUCKET/PREFIX --cache-dir DIR [...]   (a replica)
python -m server keys add NAME --keys-file F [--rate-limit N]
python -m server secrets rotate [--file F] [--keep N] [--stage] [--create]
python -m server secrets promote [--file F]      (after rotate --stage)
python -m server secrets image-keys [--file F]   (for a CDN that verifies image links)
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from pathlib import Path

from server.config import Config, check_log_level
from server.workers import configure_logging, serve


def main(argv: list[str] | None = None) -> int:
    """Dispatch to `keys` or to serving."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["keys"]:
        return keys_command(argv[1:])
    if argv[:1] == ["secrets"]:
        return secrets_command(argv[1:])
    return serve_command(argv)


def keys_command(argv: list[str]) -> int:
    """`keys add NAME --keys-file F [--rate-limit N]`: print the new key on the last line."""
    from server.security.keys import add_key

    parser = argparse.ArgumentParser(prog="python -m server keys")
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", help="create a key; only its SHA-256 hash is stored")
    add.add_argument("name")
    add.add_argument("--keys-file", type=Path, required=True)
    add.add_argument(
        "--rate-limit",
        type=int,
        default=None,
        help="requests a minute for this key (default: the server's default)",
    )
    args = parser.parse_args(argv)
    try:
        key = add_key(args.keys_file, args.name, args.rate_limit)
    except ValueError as exc:  # the message names the file where the file is at fault
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # may name a file beside it (its lock, a temporary file)
        print(f"error: cannot update the keys file {args.keys_file}: {exc}", file=sys.stderr)
        return 1
    limit = f"{args.rate_limit} requests a minute" if args.rate_limit else "the default rate limit"
    print(f"Created key {args.name!r} ({limit}); its hash is stored in {args.keys_file}.")
    print("Send it as the X-API-Key header or the api_key parameter. It is shown only once:")
    print(key)
    return 0


def secrets_command(argv: list[str]) -> int:
    """`secrets rotate`: add a new signing secret (current, or staged with --stage);
    `secrets promote`: make the staged one current; `secrets image-keys`: print the derived
    image-link keys (a CDN verifies links with them and cannot mint tokens)."""
    from server.webcams.secrets import promote_secrets_file, rotate_secrets_file

    args = _secrets_parser().parse_args(argv)
    config = Config.from_env(keys_file=args.keys_file, signing_secrets_file=args.file)
    path = config.secrets_path
    try:
        if args.action == "image-keys":
            return _print_image_keys(config)
        if args.action == "promote":
            kid = promote_secrets_file(path)
            print(
                f"{path}: staged key {kid} is current; running servers sign with it within "
                "their reload interval."
            )
            return 0
        kid = rotate_secrets_file(path, max(0, args.keep), args.stage, args.create)
    except FileNotFoundError:
        hint = " or --create to make one" if args.action == "rotate" else ""
        print(
            f"error: no signing secrets file at {path} (give the server's --file or "
            f"--keys-file{hint})",
            file=sys.stderr,
        )
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.stage:
        print(
            f"{path}: new key {kid} is staged: it verifies links but does not sign yet. Give "
            "your CDN the image keys (`python -m server secrets image-keys`), then run "
            "`python -m server secrets promote`."
        )
    else:
        print(
            f"{path}: new signing key {kid} is current; running servers pick it up within "
            "their reload interval."
        )
    return 0


def _secrets_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m server secrets")
    sub = parser.add_subparsers(dest="action", required=True)
    rotate = sub.add_parser(
        "rotate",
        help="sign with a new secret from now on; tokens signed "
        "with the kept older ones stay valid until expiry",
    )
    rotate.add_argument(
        "--keep", type=int, default=2, help="older secrets to keep for verifying (default 2)"
    )
    rotate.add_argument(
        "--stage",
        action="store_true",
        help="add the new secret for verifying only, until `secrets promote` "
        "(first give a CDN that checks image links its new key)",
    )
    rotate.add_argument(
        "--create", action="store_true", help="create the secrets file if it is missing"
    )
    promote = sub.add_parser("promote", help="sign with the secret staged by `rotate --stage`")
    image_keys = sub.add_parser(
        "image-keys",
        help="print {kid: base64url key} of the image links, for a CDN that verifies them",
    )
    for command in (rotate, promote, image_keys):
        command.add_argument(
            "--file",
            type=Path,
            default=None,
            help="secrets file (default: as the server finds it: "
            "WEATHERAPI_SIGNING_SECRETS_FILE, else signing-secrets.json "
            "beside the keys file, else in ~/.config/weather-geodata-api/)",
        )
        command.add_argument(
            "--keys-file",
            type=Path,
            default=None,
            help="the server's keys file (locates the default secrets file)",
        )
    return parser


def _print_image_keys(config: Config) -> int:
    """Print the image keys of the secrets in use; read, never create: a new file would hold
    keys no running server signs with."""
    import json

    from server.webcams.secrets import parse_secrets, read_secrets_file
    from server.webcams.tokens import _b64 as b64url

    if config.signing_secrets:
        print("image keys of WEATHERAPI_SIGNING_SECRETS", file=sys.stderr)
        keys = parse_secrets(config.signing_secrets).image_keys
    else:
        print(f"image keys of {config.secrets_path}", file=sys.stderr)
        keys = read_secrets_file(config.secrets_path).image_keys
    print(json.dumps({kid: b64url(key) for kid, key in keys.items()}, indent=2))
    return 0


def serve_command(argv: list[str]) -> int:
    """Parse the serve flags over the environment's configuration, then serve."""
    # No abbreviations: `just serve` reads --build from the same arguments, whole.
    parser = argparse.ArgumentParser(prog="python -m server", allow_abbrev=False)
    parser.add_argument("--build", type=Path, dest="build_dir", help="build directory (build/)")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int, help="port (0 picks a free one)")
    parser.add_argument("--keys-file", type=Path)
    parser.add_argument("--workers", type=int, help="processes sharing the port (SO_REUSEPORT)")
    parser.add_argument(
        "--build-from",
        metavar="s3://BUCKET/PREFIX",
        help="follow the builds published there (python -m pipeline publish --to)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="with --build-from: where downloaded versions are kept and served from "
        "(the build directory; default: --build, else build/)",
    )
    args = parser.parse_args(argv)
    if args.cache_dir is not None:
        if args.build_dir is not None and args.build_dir != args.cache_dir:
            print(
                "error: --cache-dir is the build directory: give one of --build, --cache-dir",
                file=sys.stderr,
            )
            return 2
        args.build_dir = args.cache_dir
    del args.cache_dir
    config = Config.from_env(**vars(args))
    try:
        config.check()
        check_log_level()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.log_format)
    if config.links_follow_host and not _is_loopback(config.host):
        logging.getLogger("server").warning(
            "listening on %s without WEATHERAPI_BASE_URL: signed webcam links and the player's "
            "Content-Security-Policy take their origin from each request's Host header; set "
            "WEATHERAPI_BASE_URL to this server's public URL",
            config.host,
        )
    if not _keys_file_usable(config):
        return 2
    if not config.signing_secrets and not _prepare_secrets_file(config):
        return 2
    if config.build_from:
        try:
            config.build_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"error: cache directory {config.build_dir}: {exc.strerror}", file=sys.stderr)
            return 2
    elif not config.build_dir.is_dir():
        # Served as "nothing published yet" (the pipeline may run later), but a typo would
        # look the same: say where the server looks.
        logging.getLogger("server").warning(
            "build directory %s does not exist: every area answers 503 until the pipeline "
            "publishes a version there",
            config.build_dir,
        )
    from server.kernels import cache as numba_cache

    numba_cache.purge_if_stale()  # once, before any worker loads compiled code
    return serve(config)


def _keys_file_usable(config: Config) -> bool:
    """Load the keys file once before any worker starts; False (the error said) when it cannot
    be parsed or must not be trusted (writable by others, or of another user than this one or
    root): a server that started anyway would run without the keys its operator meant."""
    from server.security.keys import KeyStore

    if config.keys_file is not None and not config.keys_file.exists():
        print(
            f"warning: keys file {config.keys_file} does not exist: every request that needs "
            f"a key gets 403 until it is created (python -m server keys add NAME "
            f"--keys-file {config.keys_file})",
            file=sys.stderr,
        )
    try:
        KeyStore(config.keys_file)
    except Exception as exc:  # noqa: BLE001 (one line, whatever is wrong with the file)
        print(f"error: keys file: {exc}", file=sys.stderr)
        return False
    return True


def _is_loopback(host: str) -> bool:
    """True for an address (or localhost) that only this machine can reach."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def _prepare_secrets_file(config: Config) -> bool:
    """Create the secrets file once before any worker starts, warning about its location;
    False (the error said) when it cannot be made or must not be trusted."""
    from server.webcams.secrets import ensure_secrets_file, location_warnings

    path = config.secrets_path
    for warning in location_warnings(path, config.legacy_secrets_path):
        logging.getLogger("server").warning("%s", warning)
    try:
        ensure_secrets_file(path)
    except (OSError, ValueError) as exc:
        print(f"error: signing secrets: {exc}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
