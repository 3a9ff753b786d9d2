"""Engines: shape/stride algebra, elementwise launch planning, copies. Private."""
