"""``python -m tests.hosts.delay_proxy PORT HOST TARGET_PORT MILLISECONDS``: a TCP proxy
that adds ``MILLISECONDS`` to every round trip (half each way), keeping the order of
the bytes. It listens on 127.0.0.1:PORT of the namespace it runs in.

It stands in for ``tc qdisc … netem delay``: the kernels of this workplace's machines
are built without ``sch_netem`` ("Specified qdisc kind is unknown")."""

from __future__ import annotations

import asyncio
import sys


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Forward what ``reader`` gets to ``writer``, each chunk ``delay`` seconds late."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await pending.get()
            if not data:
                break
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(65536):
            pending.put_nowait((loop.time() + delay, data))
    except ConnectionError:
        pass
    pending.put_nowait((0.0, b""))
    await sender


async def main(port: int, host: str, target_port: int, milliseconds: float) -> None:
    one_way = milliseconds / 2000

    async def connect(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, one_way),
            pump(server_reader, client_writer, one_way),
            return_exceptions=True,
        )

    server = await asyncio.start_server(connect, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
