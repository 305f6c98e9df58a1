"""Command line: serve the API, or manage keys.

    python -m server [--build DIR] [--host H] [--port P] [--keys-file F] [--workers N]
    python -m server keys add NAME --keys-file F [--rate-limit N]
    python -m server secrets rotate [--file F] [--keep N]
    python -m server secrets image-keys [--file F]   (for a CDN that verifies image links)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server.config import Config
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
    from server.keys import add_key

    parser = argparse.ArgumentParser(prog="python -m server keys")
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", help="create a key; only its SHA-256 hash is stored")
    add.add_argument("name")
    add.add_argument("--keys-file", type=Path, required=True)
    add.add_argument("--rate-limit", type=int, default=None,
                     help="requests a minute for this key (default: the server's default)")
    args = parser.parse_args(argv)
    try:
        key = add_key(args.keys_file, args.name, args.rate_limit)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    limit = f"{args.rate_limit} requests a minute" if args.rate_limit else "the default rate limit"
    print(f"Created key {args.name!r} ({limit}); its hash is stored in {args.keys_file}.")
    print("Send it as the X-API-Key header or the api_key parameter. It is shown only once:")
    print(key)
    return 0


def secrets_command(argv: list[str]) -> int:
    """`secrets rotate`: make a new signing secret current; `secrets image-keys`: print the
    derived image-link keys (a CDN verifies links with them and cannot mint tokens)."""
    import json

    from server.areas.webcams_tokens import _b64 as b64url
    from server.areas.webcams_secrets import (parse_secrets, read_secrets_file,
                                              rotate_secrets_file)

    parser = argparse.ArgumentParser(prog="python -m server secrets")
    sub = parser.add_subparsers(dest="action", required=True)
    rotate = sub.add_parser("rotate", help="sign with a new secret from now on; tokens signed "
                                           "with the kept older ones stay valid until expiry")
    rotate.add_argument("--keep", type=int, default=2,
                        help="older secrets to keep for verifying (default 2)")
    image_keys = sub.add_parser("image-keys", help="print {kid: base64url key} of the image "
                                                   "links, for a CDN that verifies them")
    for command in (rotate, image_keys):
        command.add_argument("--file", type=Path, default=None,
                             help="secrets file (default: as the server finds it: "
                                  "WEATHERAPI_SIGNING_SECRETS_FILE, else signing-secrets.json "
                                  "beside the keys file, else in ~/.config/weather-geodata-api/)")
        command.add_argument("--keys-file", type=Path, default=None,
                             help="the server's keys file (locates the default secrets file)")
    args = parser.parse_args(argv)
    config = Config.from_env(keys_file=args.keys_file, signing_secrets_file=args.file)
    try:
        if args.action == "image-keys":
            # Read, never create: a new file would hold keys no running server signs with.
            if config.signing_secrets:
                print("image keys of WEATHERAPI_SIGNING_SECRETS", file=sys.stderr)
                keys = parse_secrets(config.signing_secrets).image_keys
            else:
                print(f"image keys of {config.secrets_path}", file=sys.stderr)
                keys = read_secrets_file(config.secrets_path).image_keys
            print(json.dumps({kid: b64url(key) for kid, key in keys.items()}, indent=2))
            return 0
        kid = rotate_secrets_file(config.secrets_path, keep=max(0, args.keep))
    except FileNotFoundError:
        print(f"error: no signing secrets file at {config.secrets_path} (give the server's "
              "--file or --keys-file)", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{config.secrets_path}: new signing key {kid} is current; running servers pick it "
          "up within their reload interval.")
    return 0


def serve_command(argv: list[str]) -> int:
    """Parse the serve flags over the environment's configuration, then serve."""
    parser = argparse.ArgumentParser(prog="python -m server")
    parser.add_argument("--build", type=Path, dest="build_dir", help="build directory (build/)")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int, help="port (0 picks a free one)")
    parser.add_argument("--keys-file", type=Path)
    parser.add_argument("--workers", type=int, help="processes sharing the port (SO_REUSEPORT)")
    args = parser.parse_args(argv)
    config = Config.from_env(**vars(args))
    if config.workers < 1:
        parser.error("--workers must be at least 1")
    configure_logging()
    if not config.signing_secrets:
        from server.areas.webcams_secrets import ensure_secrets_file
        try:    # create it once before any worker starts; refuse one others can read
            ensure_secrets_file(config.secrets_path)
        except (OSError, ValueError) as exc:
            print(f"error: signing secrets: {exc}", file=sys.stderr)
            return 2
    return serve(config)


if __name__ == "__main__":
    sys.exit(main())
