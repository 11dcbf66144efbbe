"""Two tiny URDFs for the docstring examples (the bundled robots in ``urdf/`` are the real ones)."""

PENDULUM_URDF = """
<robot name="pendulum">
  <!-- A 1 kg point mass 1 m below a pivot that swings about +y. -->
  <link name="base"/>
  <link name="link">
    <inertial><origin xyz="0 0 -1"/><mass value="1"/>
      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
  </link>
  <joint name="swing" type="continuous">
    <parent link="base"/><child link="link"/><axis xyz="0 1 0"/>
  </joint>
</robot>
"""

TWO_LINK_URDF = """
<robot name="two_link">
  <!-- The planar 2R arm of Lynch & Park section 9.1: point masses m1 = m2 = 1 kg at the ends of
       links L1 = L2 = 1 m.  The book's plane (x, y) with gravity along -y is our (x, z); the
       joints turn about -y so that a positive angle lifts the arm, as in the book. -->
  <link name="base"/>
  <link name="upper">
    <inertial><origin xyz="1 0 0"/><mass value="1"/>
      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
  </link>
  <link name="fore">
    <inertial><origin xyz="1 0 0"/><mass value="1"/>
      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
  </link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 -1 0"/>
    <limit lower="-3.14" upper="3.14" effort="100" velocity="5"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="1 0 0"/><axis xyz="0 -1 0"/>
    <limit lower="-3.14" upper="3.14" effort="100" velocity="5"/>
  </joint>
  <joint name="tip_joint" type="fixed">
    <parent link="fore"/><child link="tip"/><origin xyz="1 0 0"/>
  </joint>
</robot>
"""
