"""Two small MCP servers written with FastMCP, in the shape of the MCP Tool Harness's
example: `trade` serves `coupon.reserve`, `payment` serves `payment.refund`. Run over stdio
by the gateway's tests of the Harness policy format: `python fastmcp_trade.py trade`."""

import sys

from mcp.server.fastmcp import FastMCP

reserved: list[tuple[str, str]] = []
refunded: list[str] = []


def trade() -> FastMCP:
    server = FastMCP("trade-mcp")

    @server.tool(name="coupon.reserve")
    def reserve(campaign_id: str, order_id: str) -> dict:
        """Reserve coupon stock of a campaign for an order before it is submitted."""
        reserved.append((campaign_id, order_id))
        return {"campaign_id": campaign_id, "order_id": order_id, "reserved": True}

    return server


def payment() -> FastMCP:
    server = FastMCP("payment-mcp")

    @server.tool(name="payment.refund")
    def refund(order_id: str, amount_cents: int) -> dict:
        """Refund an order's payment, in whole cents."""
        refunded.append(order_id)
        return {"order_id": order_id, "refunded_cents": amount_cents, "refunds": len(refunded)}

    return server


if __name__ == "__main__":
    servers = {"trade": trade, "payment": payment}
    if len(sys.argv) != 2 or sys.argv[1] not in servers:
        sys.exit("usage: fastmcp_trade.py trade|payment")
    servers[sys.argv[1]]().run("stdio")
