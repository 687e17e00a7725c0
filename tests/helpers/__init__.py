"""Test helpers shared by unit, integration and benchmark scripts."""
