#!/usr/bin/env python3
"""proxy.py TARGET_PORT DELAY_MS -- a TCP proxy on a free loopback port that
forwards every byte to 127.0.0.1:TARGET_PORT and back, each chunk DELAY_MS
late in each direction (order kept), so a round trip takes 2 x DELAY_MS more.
It prints "listening on PORT" once ready and runs until killed. TLS passes
through untouched. Used by drill_latency.sh."""
import asyncio
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        try:
            while True:
                t, data = await queue.get()
                wait = t + delay - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    sender = asyncio.create_task(send())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time(), data))
            if not data:
                break
    except (ConnectionError, OSError):
        queue.put_nowait((loop.time(), b""))
    await sender


async def main():
    target, delay = int(sys.argv[1]), int(sys.argv[2]) / 1000.0

    async def on_client(cr, cw):
        try:
            sr, sw = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, sw, delay), pipe(sr, cw, delay))

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    print("listening on %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
