"""Reaching people in time: deadlines, reminders, notifications, approval links, delegation."""
