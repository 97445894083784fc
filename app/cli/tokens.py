"""`irlens token`: create, list and revoke the API tokens that uploads sign in with."""

from __future__ import annotations

import argparse
import sys

from app.cli.common import database_from


def cmd_token(args: argparse.Namespace) -> int:
    from app.web.auth import create_token, list_tokens, revoke_token

    db = database_from(args)
    try:
        with db.session() as session:
            if args.token_command == "create":
                try:
                    token = create_token(session, args.name)
                except ValueError as error:
                    print(f"irlens: {error}", file=sys.stderr)
                    return 1
                session.commit()
                print(f"created the API token {args.name!r}; it is shown once, keep it secret:")
                print(token)  # the last line of the output: `irlens token create me | tail -1`
            elif args.token_command == "list":
                for token in list_tokens(session):
                    created = token.created_at.isoformat(timespec="seconds") if token.created_at else ""
                    print(f"{token.name}\t{created}")
            elif not revoke_token(session, args.name):
                print(f"irlens: no token named {args.name!r}", file=sys.stderr)
                return 1
            else:
                session.commit()
                print(f"revoked the API token {args.name!r}")
    finally:
        db.dispose()
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    token = commands.add_parser("token", help="API tokens: create, list, revoke")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    for name, text in (("create", "make a token for NAME; its last output line is the token"),
                       ("list", "list the tokens' names"),
                       ("revoke", "delete the token NAME (its sign-ins end too)")):
        sub = token_commands.add_parser(name, help=text)
        if name != "list":
            sub.add_argument("name", metavar="NAME", help="who uploads with it (recorded as the runs' owner)")
        sub.add_argument("--db", help="database URL")
    token.set_defaults(handler=cmd_token)
