"""Concurrency: many producers and consumers (threads and asyncio tasks) on one server."""
